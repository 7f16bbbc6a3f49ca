"""Names with undecodable bytes (issue 11, item 5): a dist-info folder whose name is not UTF-8 prints
escaped (`\\xff`) in text, JSON and JUnit, under a strict UTF-8 stdout too, and leaves no temporary.
The folder is real: created from bytes on the real filesystem."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *args], capture_output=True, text=True, timeout=60, env=full
    )


def undecodable_dist(site: Path) -> None:
    folder = os.fsencode(site) + b"/caf\xff-1.0.dist-info"
    os.mkdir(folder)  # no METADATA: an ERROR line whose subject is this path


def test_text_json_and_junit_show_the_byte_escaped(env, clean_root, tmp_path: Path):
    undecodable_dist(env.site)
    env.add("peft", "0.17.0")
    out = tmp_path / "out"
    out.mkdir()
    report, junit = out / "r.json", out / "j.xml"
    proc = cli(
        "audit", str(env.prefix), "--root", str(clean_root), "--report", str(report), "--junit", str(junit),
        env={"PYTHONIOENCODING": "utf-8:strict"},
    )  # fmt: skip
    assert proc.returncode == 0 and "internal error" not in proc.stderr, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if "caf" in ln)
    assert line.startswith("G1 ERROR: ") and "caf\\xff-1.0.dist-info/METADATA" in line
    data = json.loads(report.read_text(encoding="utf-8"))
    assert any("caf\\xff-1.0.dist-info" in f["subject"] for f in data["findings"])
    cases = ET.parse(junit).getroot().findall("testcase")
    assert any("caf\\xff-1.0.dist-info" in c.get("name", "") for c in cases)
    assert sorted(p.name for p in out.iterdir()) == ["j.xml", "r.json"]  # no .tmp left


def test_json_on_stdout_is_valid_utf8(env, clean_root):
    undecodable_dist(env.site)
    proc = cli(
        "audit", str(env.prefix), "--root", str(clean_root), "--json", env={"PYTHONIOENCODING": "utf-8"}
    )
    assert proc.returncode == 0, proc.stderr
    assert any("caf\\xff" in f["subject"] for f in json.loads(proc.stdout)["findings"])


def test_control_characters_in_names_cannot_drive_the_terminal(env, clean_root):
    os.mkdir(os.fsencode(env.site) + b"/evil\x1b[2J-1.0.dist-info")
    proc = cli("audit", str(env.prefix), "--root", str(clean_root))
    assert "\x1b" not in proc.stdout and "evil\\x1b[2J-1.0.dist-info" in proc.stdout
