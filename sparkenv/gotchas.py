"""The G1–G10 catalog (sparkenv/data/gotchas.toml) and its `sparkenv explain` text."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from sparkenv import datafiles
from sparkenv.errors import SparkenvError

FIELDS = ("symptom", "cause", "check", "fix")


@dataclass(frozen=True)
class Gotcha:
    id: str
    title: str
    symptom: str
    cause: str
    check: str
    fix: str
    stages: tuple[str, ...]


def catalog() -> list[Gotcha]:
    data = datafiles.load("gotchas")
    items = [
        Gotcha(k, v["title"], v["symptom"], v["cause"], v["check"], v["fix"], tuple(v["stages"]))
        for k, v in data.items()
    ]
    return sorted(items, key=lambda g: int(g.id[1:]))


def lookup(ident: str) -> Gotcha:
    m = re.fullmatch(r"[gG]?(\d+)", ident.strip())
    wanted = f"G{int(m.group(1))}" if m else ident
    for g in catalog():
        if g.id == wanted:
            return g
    raise SparkenvError(f"{ident}: no such gotcha; use G1 … G10 (sparkenv explain lists them)")


def explain(g: Gotcha, width: int = 100) -> str:
    lines = [f"{g.id}: {g.title}", f"  stages: {', '.join(g.stages)}"]
    for field in FIELDS:
        body = textwrap.fill(getattr(g, field), width=width, initial_indent="    ", subsequent_indent="    ")
        lines += [f"  {field}:", body]
    return "\n".join(lines) + "\n"


def listing() -> str:
    return "".join(f"{g.id:<4} {g.title}\n" for g in catalog())
