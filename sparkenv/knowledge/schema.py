"""Turn a parsed data file into frozen records, checking every key against the record's types.

One converter for every file of sparkenv/data, so each file's shape is written once, as the record its
callers read: a missing, unknown (a typo) or mistyped key is one KnowledgeError naming the file and the key,
at load. Lists become tuples, tables read-only mappings, and `DistName` fields are canonicalised (PEP 503,
sparkenv.core.names: packaging's rule without its import). Records are typing.NamedTuple classes
(immutable, typed, with defaults) because the gate defines a few dozen on every start and they cost less
to define than frozen dataclasses (benchmarks/knowledge_load.py). `_toml_keys` maps a field to a TOML key
of another name.
"""

from __future__ import annotations

import enum
import functools
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, NewType, TypeVar

from sparkenv.core.errors import SparkenvError
from sparkenv.core.names import canonical

DistName = NewType("DistName", str)  # a distribution name, canonicalised at load
T = TypeVar("T")


class KnowledgeError(SparkenvError, ValueError):
    """A data file does not have the shape the code needs: one line naming file and key, exit 2 (inside a
    rule, the rule's ERROR line)."""


def build(cls: type[T], data: Any, file: str) -> T:
    """`data` (a parsed sparkenv/data/<file>.toml) as a `cls`, or one KnowledgeError naming file and key."""
    return _convert(cls, data, f"sparkenv/data/{file}.toml", "")


def _fail(where: str, path: str, problem: str) -> KnowledgeError:
    return KnowledgeError(f"{where}: {path or 'the file'} {problem}")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


_KINDS = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


def is_record(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields")


def _convert(tp: Any, value: Any, where: str, path: str) -> Any:
    if is_record(tp):
        return _record(tp, value, where, path)
    if tp is Any:
        return value
    for convert in (_scalar, _generic):
        found = convert(tp, value, where, path)
        if found is not _NO_RULE:
            return found
    raise TypeError(f"{where}: {path}: no rule for the type {tp!r}")  # a bug in a record, not in data


_NO_RULE = object()  # what a converter returns for a type that is not its kind


def _scalar(tp: Any, value: Any, where: str, path: str) -> Any:
    """A distribution name, str, int, float, bool, a regular expression or an enum member."""
    if tp is DistName:
        if not isinstance(value, str) or not value:
            raise _fail(where, path, f"must be a distribution name, got {value!r}")
        return canonical(value)
    if tp in _KINDS:
        ok = isinstance(value, (int, float) if tp is float else tp) and (
            tp is bool or type(value) is not bool
        )
        if not ok:
            raise _fail(where, path, f"must be {_KINDS[tp]}, got {value!r}")
        return float(value) if tp is float else value
    if tp is re.Pattern or typing.get_origin(tp) is re.Pattern:
        if not isinstance(value, str):
            raise _fail(where, path, f"must be a regular expression, got {value!r}")
        try:
            return re.compile(value)
        except re.error as exc:
            raise _fail(where, path, f"is not a valid regular expression: {exc}") from None
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            choices = ", ".join(str(m.value) for m in tp)
            raise _fail(where, path, f"must be one of {choices}, got {value!r}") from None
    return _NO_RULE


def _generic(tp: Any, value: Any, where: str, path: str) -> Any:
    """X | None, Literal[...], tuple[X, ...] or a fixed tuple, Mapping[K, V]."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):  # X | None: None is the field's default when absent
        (inner,) = (a for a in args if a is not type(None))
        return _convert(inner, value, where, path)
    if origin is typing.Literal:
        if value not in args:
            raise _fail(where, path, f"must be one of {', '.join(map(repr, args))}, got {value!r}")
        return value
    if origin is tuple:
        return _tuple(args, value, where, path)
    if origin is Mapping:
        if not isinstance(value, dict):
            raise _fail(where, path, f"must be a table, got {value!r}")
        kt, vt = args
        out = {}
        for k, v in value.items():
            out[_convert(kt, k, where, _join(path, f"[{k!r}]"))] = _convert(vt, v, where, _join(path, k))
        return types.MappingProxyType(out)
    return _NO_RULE


def _tuple(args: tuple[Any, ...], value: Any, where: str, path: str) -> tuple[Any, ...]:
    if not isinstance(value, list):
        raise _fail(where, path, f"must be a list, got {value!r}")
    if len(args) == 2 and args[1] is Ellipsis:
        items = [(args[0], v) for v in value]
    elif len(value) != len(args):
        raise _fail(where, path, f"must be a list of {len(args)}, got {value!r}")
    else:
        items = list(zip(args, value, strict=True))
    return tuple(_convert(t, v, where, f"{path}[{i}]") for i, (t, v) in enumerate(items))


def _record(cls: Any, value: Any, where: str, path: str) -> Any:
    if not isinstance(value, dict):
        raise _fail(where, path, f"must be a table, got {value!r}")
    hints = _hints(cls)
    renamed = getattr(cls, "_toml_keys", {})
    names = {renamed.get(f, f): f for f in cls._fields}  # TOML key -> field
    unknown = [k for k in value if k not in names]
    if unknown:
        raise _fail(where, _join(path, unknown[0]), "is not a known key (a typo, or a field the code lacks)")
    kwargs = {}
    for name, f in names.items():
        sub = _join(path, name)
        if name not in value:
            if f not in cls._field_defaults:
                raise _fail(where, sub, "is missing")
            continue
        kwargs[f] = _convert(hints[f], value[name], where, sub)
    return cls(**kwargs)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
