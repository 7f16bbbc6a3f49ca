"""G9's judgements of the lock file (Stage.LOCKFILE: may `sparkenv lock` write it, is a written lock
current) and of the image being built (Stage.IMAGE: the facts base_check.py prints inside the image),
both ways, in-process through the registry. The base check runs for real: the script the image runs,
against this interpreter's installed distributions and a snapshot that says they were otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from sparkenv import rules
from sparkenv.core.report import Status
from sparkenv.facts import image as base_facts
from sparkenv.facts.lockfile import Currency, LockFileFacts, Outcome
from sparkenv.image.base_report import findings as judged

BASE_CHECK = Path(str(resources.files("sparkenv.image").joinpath("base_check.py")))


def lockfile(**facts: object) -> list[tuple[str, str]]:
    found = rules.evaluate(rules.Stage.LOCKFILE, LockFileFacts(**facts))  # type: ignore[arg-type]
    return [(f.status.value, f.summary) for f in found]


@pytest.mark.parametrize(
    ("outcome", "status", "words"),
    [
        (Outcome("p.toml", "r.txt", packages=3, stages=2), "PASS", "wrote p.toml and r.txt: 3 packages"),
        (Outcome("p.toml", "r.txt"), "PASS", "nothing to lock beyond the base"),
        (Outcome("p.toml", "r.txt", inputs_fail=True), "INFO", "not resolved and no lock written"),
        (Outcome("p.toml", "r.txt", unknown=2), "FAIL", "p.toml not written: 2 file(s) could not be checked"),
        (Outcome("p.toml", "r.txt", fails=1, unknown=2), "INFO", "the resolved set fails the policy"),
    ],
)
def test_the_lock_is_written_only_when_nothing_failed_and_every_file_was_read(outcome, status, words):
    ((got, summary),) = lockfile(outcome=outcome)
    assert got == status and words in summary


@pytest.mark.parametrize(
    ("problem", "words"),
    [
        ({"exists": False}, "p.toml does not exist"),
        ({"missing_input": "req.txt"}, "records input req.txt, which no longer exists"),
        ({"other_format": True}, "stale: written by another sparkenv lock format"),
        ({"inputs_changed": True}, "stale: inputs changed since the lock (req.txt)"),
        ({"profile_changed": True}, "stale: profile ngc-25.11 changed since the lock"),
        ({"requirements_missing": "r.txt"}, "stale: r.txt is missing"),
    ],
)
def test_a_written_lock_is_current_or_stale_with_the_command_that_re_locks_it(problem, words):
    current = {"pylock": "p.toml", "output_dir": "out", "inputs": ("req.txt",), "profile": "ngc-25.11"}
    assert lockfile(checked=(Currency(**current, digest="sha256:x"),)) == [
        ("PASS", "p.toml is current with req.txt (ngc-25.11)")
    ]
    (found,) = rules.evaluate(rules.Stage.LOCKFILE, LockFileFacts(checked=(Currency(**current, **problem),)))
    assert found.status is Status.FAIL and words in found.summary
    assert found.fix and found.fix.startswith("run sparkenv lock")


def run_base_check(snapshot: dict, tmp_path: Path) -> tuple[int, str]:
    snap = tmp_path / "base-packages.json"
    snap.write_text(json.dumps(snapshot))
    proc = subprocess.run(
        [sys.executable, "-I", str(BASE_CHECK), "compare", str(snap)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.returncode, proc.stdout


def installed_pip() -> str:
    from importlib import metadata

    return metadata.version("pip")


def test_base_check_prints_facts_and_the_registry_fails_a_replaced_provided_package(tmp_path: Path):
    before = {"provided": ["pip"], "installed": {"pip": ["0.0.1"], "zz-gone": ["1.0"]}}
    code, out = run_base_check(before, tmp_path)
    assert code == 1  # stops the layer; what it means is the registry's
    assert "FAIL" not in out and out.startswith(base_facts.MARK)
    facts = base_facts.parse(out.splitlines())
    assert facts is not None
    assert facts.replaced == (base_facts.Change("pip", ("0.0.1",), (installed_pip(),)),)
    assert facts.moved == (base_facts.Change("zz-gone", ("1.0",), ()),)
    found = {f.subject: f for f in rules.evaluate(rules.Stage.IMAGE, facts)}
    assert found["pip"].status is Status.FAIL
    assert found["pip"].summary == f"a package the base provides was replaced: pip 0.0.1 -> {installed_pip()}"
    assert found["pip"].fix and "re-lock with `sparkenv lock`" in found["pip"].fix
    assert found["zz-gone"].status is Status.INFO and "zz-gone 1.0 -> removed" in found["zz-gone"].summary
    first = judged(out.splitlines())[0]  # the report's order: the FAIL first
    assert first.status is Status.FAIL and first.summary.startswith(
        "a package the base provides was replaced: pip 0.0.1 -> "
    )


def test_base_check_untouched_base_passes(tmp_path: Path):
    code, out = run_base_check({"provided": ["pip"], "installed": {"pip": [installed_pip()]}}, tmp_path)
    assert code == 0
    facts = base_facts.parse(out.splitlines())
    assert facts is not None and facts.replaced == () and facts.moved == ()
    (found,) = rules.evaluate(rules.Stage.IMAGE, facts)
    assert found.status is Status.PASS and found.summary == "the base's 1 provided packages are untouched"
    assert [f.status for f in judged(out.splitlines())] == [Status.PASS]


def test_a_damaged_facts_line_is_no_facts():
    assert base_facts.parse([f"{base_facts.MARK}{{not json"]) is None
    assert base_facts.parse(["pip said something"]) is None
