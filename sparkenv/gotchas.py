"""The G1–G10 catalog (sparkenv/data/gotchas.toml) and its `sparkenv explain` text.

What each stage checks comes from the rules registry (sparkenv/rules/gN.py, RULES): the same table the
stages run, so explain cannot list a stage that does not check, or miss one that does.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparkenv.core.errors import SparkenvError
from sparkenv.core.report import GotchaId
from sparkenv.knowledge import gotchas

if TYPE_CHECKING:
    from sparkenv.rules import Rule

FIELDS = ("symptom", "cause")

WHERE_THINGS_ARE = """\
Where things are (for the next engineer). Layers, top to bottom; an import only goes down and no import
cycle joins two modules (tests/test_layers.py reads the import graph and names what breaks either):
  CLI       sparkenv/cli/ (commands.py, options.py, entry.py, process_exit.py), <stage>/commands.py
  stages    sparkenv/resolve, lock, image, audit, gate, multinode, patches, render, watch: gather facts,
            call rules.evaluate(stage, facts), write outputs; they decide nothing themselves
  rules     sparkenv/rules/gN.py: gotcha N's RULES, one pure function per stage; a big gotcha keeps its
            stages in gN_<stage>.py (g1_installed.py, g9_resolved.py …, g10_link.py); sparkenv/rules/*.py:
            one classifier per concept (cuda_major, unsloth, hosts, wrong_cpu, replaced, parallelism …)
  facts     sparkenv/facts/: each stage's typed facts (declared, resolved, graph, lockfile, lock, image,
            installed, live, ngc, override, parallelism, timeseries), frozen, no I/O
  readers   sparkenv/cuda (ELF, fatbin, driver table), environment (dist-info, markers, pins, launchers,
            NCCL, servers, host driver, forward-compatibility libcuda), knowledge (data files, profiles)
  core      sparkenv/core/: report.py (Finding, GotchaId, verdict), outputs.py (atomic writes),
            safe_read.py, signals.py, children.py, cache.py
  sparkenv/data/*.toml      dated knowledge with public sources; loaded once by sparkenv/knowledge/
"""


@dataclass(frozen=True)
class Gotcha:
    id: GotchaId
    title: str
    symptom: str
    cause: str
    fix: str

    def rules(self) -> list[Rule]:
        """This gotcha's rules in the registry, earliest stage first."""
        from sparkenv import rules

        order = list(rules.Stage)
        return sorted(rules.rules_of(self.id), key=lambda r: order.index(r.stage))

    def checks(self) -> list[tuple[str, str, str]]:
        """(stage, commands, what it looks at) for each stage that checks this gotcha, earliest first."""
        return [(r.stage.value, r.stage.commands, r.looks_at) for r in self.rules()]


def catalog() -> list[Gotcha]:
    from sparkenv.knowledge import packages

    index = packages().cuda13_index  # one value, written once (data/packages.toml), in every text printing it
    return [
        Gotcha(g, t.title, t.symptom, t.cause, t.fix.replace("{cuda13_index}", index))
        for g, t in gotchas().items()
    ]  # G1 … G10


def lookup(ident: str) -> Gotcha:
    wanted = GotchaId.parse(ident)
    for g in catalog():
        if g.id == wanted:
            return g
    raise SparkenvError(f"{ident}: no such gotcha; use {GotchaId.span()} (sparkenv explain lists them)")


def _fill(text: str, width: int, indent: str = "    ") -> str:
    return textwrap.fill(text, width=width, initial_indent=indent, subsequent_indent=indent)


def explain(g: Gotcha, width: int = 100) -> str:
    checks = g.checks()
    commands = dict.fromkeys(c for _, cmds, _ in checks for c in re.findall(r"sparkenv \w+", cmds))
    lines = [f"{g.id}: {g.title}", f"  stages: {', '.join(commands)}"]
    for field in FIELDS:
        lines += [f"  {field}:", _fill(getattr(g, field), width)]
    files = dict.fromkeys(f"{r.check.__module__.rsplit('.', 1)[-1]}.py" for r in g.rules())
    lines.append(f"  check: (every stage's judgement is in sparkenv/rules/: {', '.join(files)})")
    for stage, cmds, looks_at in checks:
        lines.append(_fill(f"{stage} — {cmds}: {looks_at}", width))
    lines += ["  fix:", _fill(g.fix, width)]
    return "\n".join(lines) + "\n"


def listing() -> str:
    return "".join(f"{g.id:<4} {g.title}\n" for g in catalog()) + "\n" + WHERE_THINGS_ARE
