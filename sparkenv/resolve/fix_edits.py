"""A proposed change to a lock's inputs as data: which declared requirement it changes and what is
written instead. One edit is applied two ways that must agree: to the parsed inputs in memory (what a
trial re-resolves, resolve/fixes.py) and to the files' text (what `sparkenv lock --fix` writes). Both
build the new requirement with `requirement_text`, from the declared one, so its marker stays.

Kinds: "replace" (another distribution: a CUDA 13 counterpart), "pin" (another release: the nearest
with a wheel for the target), "upgrade" (the root's version limit dropped, uv picks the newest it
allows), "extra" (a CUDA-major extra swapped for the target's or dropped)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from sparkenv.facts.declared import Declared
from sparkenv.lock import inputs as inputs_mod


@dataclass(frozen=True)
class Edit:
    kind: str  # "replace" | "pin" | "upgrade" | "extra"
    key: str  # the declared requirement it changes: the one the user wrote (the chain's root)
    new: str  # the requirement written instead, marker excluded ("" drops nothing: never empty here)
    subject: str  # the finding's subject it answers (the root itself, or a leaf the root pulls in)
    why: str = ""  # what makes it a candidate, said after it ("the nearest release with a wheel for …")

    @property
    def says(self) -> str:
        """The edit in words, as a fix line prints it."""
        why = f", {self.why}" if self.why else ""
        if self.kind == "upgrade":
            return f"let {self.key} move to its newest release (require {self.new}){why}"
        if self.kind == "pin":
            return f"require {self.new}{why}"
        return f"write {self.new} instead of {self.key}{why}"

    @property
    def new_key(self) -> str:
        return canonicalize_name(Requirement(self.new).name)


class CannotEdit(Exception):
    """The file's text cannot take the edit as written (a continued line, hashes, an include elsewhere)."""


def requirement_text(d: Declared, new: str) -> str:
    """`new` with the declared requirement's marker, as the resolver and the file get it."""
    return f"{new} ; {d.marker}" if d.marker is not None else new


def on_inputs(inp: inputs_mod.Inputs, edits: list[Edit]) -> inputs_mod.Inputs:
    """A copy of `inp` with each edit applied to every declaration of its key (constraints kept)."""
    by_key = {e.key: e for e in edits}
    out: list[Declared] = []
    for d in inp.requirements:
        e = by_key.get(d.key or "")
        if e is None or d.constraint or d.url:
            out.append(d)
            continue
        r = Requirement(requirement_text(d, e.new))
        out.append(
            replace(
                d,
                key=canonicalize_name(r.name),
                text=str(r),
                specifier=r.specifier,
                marker=r.marker,
                extras=frozenset(r.extras),
            )
        )
    return replace(inp, requirements=out)


def _file_and_line(d: Declared) -> tuple[str, int | None]:
    name, _, line = d.where.rpartition(":")
    if name and line.isdigit():
        return name, int(line)
    return d.where, None


def files_touched(inp: inputs_mod.Inputs, edits: list[Edit]) -> dict[str, list[tuple[Declared, Edit]]]:
    """The file (as the inputs name it) each edit lands in, with the declarations it rewrites."""
    keys = {e.key: e for e in edits}
    out: dict[str, list[tuple[Declared, Edit]]] = {}
    for d in inp.requirements:
        e = keys.get(d.key or "")
        if e is None or d.constraint or d.url:
            continue
        name, _ = _file_and_line(d)
        out.setdefault(name, []).append((d, e))
    return out


_TRAILING_COMMENT = re.compile(r"(\s+#.*)$")


def on_text(path: Path, text: str, changes: list[tuple[Declared, Edit]]) -> str:
    """The file's text with each declaration rewritten in place: a requirements line keeps its trailing
    comment; a pyproject.toml string keeps its quotes. Raises CannotEdit where the text is not plain."""
    lines = text.splitlines(keepends=True)
    toml = path.suffix == ".toml"
    for d, e in changes:
        _, lineno = _file_and_line(d)
        if lineno is None or not 0 < lineno <= len(lines):
            raise CannotEdit(f"{d.where}: the line of {d.key} is not known")
        line = lines[lineno - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        new = requirement_text(d, e.new)
        lines[lineno - 1] = (_toml_line(body, d, new) if toml else _req_line(body, d, new)) + ending
    return "".join(lines)


def _req_line(body: str, d: Declared, new: str) -> str:
    if body.rstrip().endswith("\\") or "--hash" in body or body.lstrip().startswith("-"):
        raise CannotEdit(f"{d.where}: the line is continued, hashed or an option: edit it by hand")
    comment = _TRAILING_COMMENT.search(body)
    head = body[: comment.start()] if comment else body
    if _key_of(head) != d.key:
        raise CannotEdit(f"{d.where}: the line no longer names {d.key}")
    return new + (comment.group(1) if comment else "")


_QUOTED = re.compile(r"""(["'])(.*?)\1""")


def _toml_line(body: str, d: Declared, new: str) -> str:
    for m in _QUOTED.finditer(body):
        if _key_of(m.group(2)) == d.key:
            q = m.group(1)
            return body[: m.start()] + q + new.replace(q, "'" if q == '"' else '"') + q + body[m.end() :]
    raise CannotEdit(f"{d.where}: no quoted requirement on {d.key} on that line")


def _key_of(text: str) -> str | None:
    try:
        return canonicalize_name(Requirement(text.strip()).name)
    except InvalidRequirement:
        return None


def fixed_name(path: Path) -> Path:
    """Where `lock --fix` writes a changed input beside the original: requirements.txt ->
    requirements.fixed.txt, pyproject.toml -> pyproject.fixed.toml (read as a pyproject)."""
    return path.with_name(f"{path.stem}.fixed{path.suffix or '.txt'}")
