"""What adding a gotcha touches (docs/architecture.md): a G11 is written into a copy of the package
— its rule module, its row in the catalogue, the schema's id pattern — and then, with no other edit, it
is a G-number everywhere: `sparkenv explain G11`, the registry, the gate's replay, --select, waivers.
Its tests (tests/rules/test_g11.py) are the fourth file; a data file, when it has one, the fifth."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FACTS = ROOT / "tests" / "fixtures" / "facts" / "h200-static.json"

CATALOGUE = """
[G11]
title = "A planted gotcha"
symptom = "Nothing: it exists to show what adding a gotcha touches."
cause = "tests/test_adding_a_gotcha.py wrote it."
fix = "None needed."
"""

RULE = '''"""G11 — planted by tests/test_adding_a_gotcha.py."""

from __future__ import annotations

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.rules import Rule, Stage


def live(f) -> list[Finding]:
    return [Finding(GotchaId.G11, Status.PASS, "the planted gotcha holds", "planted")]


RULES = (Rule(Stage.LIVE, live, "nothing: a planted gotcha"),)
'''

# Exactly the files a G11 touches under sparkenv/ (its tests live in tests/rules/).
TOUCHED = ("data/gotchas.toml", "rules/g11.py", "data/report.schema.json")


def test_a_gotcha_added_in_its_files_alone_is_a_g_number_everywhere(tmp_path: Path) -> None:
    pkg = tmp_path / "sparkenv"
    shutil.copytree(ROOT / "sparkenv", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "data" / "gotchas.toml").write_text((pkg / "data" / "gotchas.toml").read_text() + CATALOGUE)
    (pkg / "rules" / "g11.py").write_text(RULE)
    schema = pkg / "data" / "report.schema.json"
    schema.write_text(schema.read_text().replace('"^G(10|[1-9])$"', '"^G(1[01]|[1-9])$"'))
    changed = sorted(
        p.relative_to(pkg).as_posix()
        for p in pkg.rglob("*")
        if p.is_file()
        and "__pycache__" not in p.parts
        and (
            not (ROOT / "sparkenv" / p.relative_to(pkg)).exists()
            or (ROOT / "sparkenv" / p.relative_to(pkg)).read_bytes() != p.read_bytes()
        )
    )
    assert changed == sorted(TOUCHED)

    env = {**os.environ, "PYTHONPATH": str(tmp_path), "SPARKENV_GATE": "warn"}
    env.pop("SPARKENV_GATE_DEEP", None)

    def sparkenv(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sparkenv", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            cwd=tmp_path,
        )

    explained = sparkenv("explain", "G11")
    assert explained.returncode == 0 and "A planted gotcha" in explained.stdout, explained.stderr
    assert "sparkenv gate" in explained.stdout  # its stage, read from its RULES

    replay = sparkenv("gate", "--facts", str(FACTS), "--select", "11", "--json")
    assert replay.returncode == 0, replay.stderr
    report = json.loads(replay.stdout)
    assert [(f["id"], f["status"]) for f in report["findings"]] == [("G11", "PASS")]
    import jsonschema

    jsonschema.validate(report, json.loads(schema.read_text()))

    (tmp_path / "waivers.toml").write_text(
        '[[waiver]]\nid = "G11"\nsubject = "planted"\nreason = "a planted gotcha"\n'
    )
    waived = sparkenv("gate", "--facts", str(FACTS), "--select", "G11", "--waivers", "waivers.toml")
    assert waived.returncode == 0 and "G11" in waived.stdout, waived.stderr
