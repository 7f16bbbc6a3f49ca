"""Load a facts snapshot for replay (`gate --facts FILE`, `host --facts FILE`): read safely, parse,
validate against the shipped schema (sparkenv/data/facts.schema.json, `sparkenv.facts/1`). Anything
wrong is one line naming the file and the problem (exit 2): a FIFO, a huge file, JSON nested 200k
deep, `"capability": [9]`, `"workload": 5`, a string where a number belongs."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from sparkenv.core.datafiles import parse_user_json
from sparkenv.core.errors import SparkenvError
from sparkenv.core.printable import printable
from sparkenv.environment.reading import UnreadableFile, read_bytes

FACTS_SCHEMA = "sparkenv.facts/1"
LIMIT = 32 << 20  # a real snapshot is ~20 KiB; its dists of a 2,000-package image well under 1 MiB


@functools.cache
def _validator() -> Any:
    # fastjsonschema: pure Python, no dependencies, compiles the schema once; only a replay pays.

    import fastjsonschema

    schema = json.loads(resources.files("sparkenv").joinpath("data", "facts.schema.json").read_text("utf-8"))
    return fastjsonschema.compile(schema)


def validate(data: Any, where: str) -> dict[str, Any]:
    """The snapshot itself when it follows the schema; SparkenvError naming the first problem otherwise."""
    import fastjsonschema

    if not isinstance(data, dict) or data.get("schema") != FACTS_SCHEMA:
        raise SparkenvError(f'{where}: not a sparkenv facts snapshot (expected "schema": "{FACTS_SCHEMA}")')
    try:
        _validator()(data)
    except fastjsonschema.JsonSchemaValueException as exc:
        raise SparkenvError(f"{where}: invalid facts snapshot: {_short(exc.message)}") from None
    except RecursionError:
        raise SparkenvError(f"{where}: invalid facts snapshot: nested too deeply") from None
    return data


def load(path: str) -> dict[str, Any]:
    try:
        raw = read_bytes(path, what="a facts snapshot (JSON)", limit=LIMIT)
    except UnreadableFile as exc:
        raise SparkenvError(str(exc)) from None

    return validate(parse_user_json(raw, path, "a facts snapshot"), path)


def _short(message: str) -> str:
    """fastjsonschema names the value `data.smi.gpus[0].power.draw`; the user's file has no `data`.
    Keys from the file may hold newlines or control characters: escaped, so the error stays one line."""
    message = printable("".join(c if c.isprintable() else repr(c)[1:-1] for c in message))
    if message.startswith("data."):
        message = message[5:]
    elif message.startswith("data "):
        message = "the snapshot " + message[5:]
    return message if len(message) <= 200 else message[:197] + "..."
