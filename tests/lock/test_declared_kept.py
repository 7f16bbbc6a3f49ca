"""A re-lock that expects the judgement kept from the lock before it (lock/judged_cache.py) takes the
declared requirements' findings kept under the same facts too, instead of judging them again beside uv:
the same findings as a full judgement. A changed input is judged again; a re-lock whose expectation
fails (uv answers otherwise) says what a cold lock of the same state says. Real wheels on a loopback
index, the real uv, the real CLI; which path was taken is read from the lock's own timeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from artifacts import serve
from test_judged_cache import Locker, _findings, _index, _remove

KEPT = "declared judgement kept"


@pytest.fixture
def index(tmp_path: Path):
    ix = _index(tmp_path / "index")
    server = serve(ix, ranges=True)
    yield ix
    server.shutdown()


@pytest.fixture
def lock(run, index, tmp_path: Path) -> Locker:
    return Locker(run, index, tmp_path)


def _cold(lock: Locker, tmp_path: Path):
    """The same lock with an empty sparkenv cache (no kept judgement, no spawn-cache entry, nothing read
    before), replacing the same lock."""
    return lock(None, env={"SPARKENV_CACHE_DIR": str(tmp_path / f"cold{lock.calls}")})


def test_a_relock_expecting_a_kept_judgement_takes_the_declared_findings_kept(lock, tmp_path):
    first = lock("app\nquantlib\ndemo\n")
    assert first.code in (0, 1), first.err
    assert KEPT not in lock.marks  # nothing kept yet: judged
    again = lock()
    assert lock.expected and lock.kept and KEPT in lock.marks, lock.marks
    assert _findings(again) == _findings(first)
    cold = _cold(lock, tmp_path)
    assert not lock.expected and KEPT not in lock.marks
    assert _findings(cold) == _findings(again)


def test_a_changed_input_has_its_declared_requirements_judged_again(lock, tmp_path):
    lock("quantlib\ndemo\n")
    lock()
    assert KEPT in lock.marks
    changed = lock("quantlib\ndemo\ndep==1.0\n")
    assert not lock.expected and KEPT not in lock.marks
    assert _findings(changed) == _findings(_cold(lock, tmp_path))
    # that judgement is kept in its turn, under its own facts
    assert _findings(lock()) == _findings(changed)
    assert lock.kept and KEPT in lock.marks


def test_a_relock_whose_expectation_fails_says_what_a_cold_lock_says(lock, index, tmp_path):
    lock("quantlib\ndemo\n")
    lock()
    assert lock.kept
    # the version the lock holds leaves the index: the kept judgement is expected, uv answers 1.0
    _remove(index, "quantlib", "quantlib-2.0-cp312-cp312-manylinux_2_17_aarch64.whl")
    moved = lock()
    assert lock.expected and not lock.kept
    assert KEPT in lock.marks  # the declared findings of the same facts still hold
    cold = _cold(lock, tmp_path)
    assert not lock.expected and not lock.kept
    assert _findings(moved) == _findings(cold)
    assert any(f["id"] == "G1" and f["status"] == "FAIL" for f in _findings(moved))


def test_a_damaged_declared_record_is_not_trusted(lock):
    first = lock("quantlib\ndemo\n")
    lock()
    assert KEPT in lock.marks
    records = list((lock.cache / "judged-locks").glob("*.declared"))
    assert records
    for record in records:
        head, body = record.read_text().split("\n", 1)
        raw = json.loads(body)
        raw["findings"] = []  # the checksum in the head no longer matches
        record.write_text(head + "\n" + json.dumps(raw))
    again = lock()
    assert lock.kept and KEPT not in lock.marks
    assert _findings(again) == _findings(first)


def test_the_declared_findings_are_kept_by_their_facts_in_process(monkeypatch, tmp_path):
    """Another requirement, profile or --allow-replace is another key: never another input's findings."""
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "cache"))
    from sparkenv.core.report import Finding, Status
    from sparkenv.environment import profiles
    from sparkenv.lock import inputs as inputs_mod
    from sparkenv.lock import judged_cache, policy
    from sparkenv.lock import plan as plan_mod

    def read(name: str, text: str) -> inputs_mod.Inputs:
        path = tmp_path / name
        path.write_text(text)
        return inputs_mod.read([str(path)], None)

    def declared(inp, prof, index, allowed=frozenset(), expected=False):
        plan = plan_mod.Plan(
            [], inp, prof, set(allowed), index, True, None, [], (tmp_path / "a", tmp_path / "b"), None
        )
        return plan_mod.judge_declared(plan, lambda found: found, expected)[0]

    bare, ngc = profiles.load("spark-bare"), profiles.load("ngc-25.11")
    flash, demo = read("flash.txt", "flash-attn==2.8.3\n"), read("demo.txt", "demo\n")
    index = plan_mod.index_options(flash, "http://127.0.0.1:9/simple/", [])
    judged = declared(flash, bare, index)
    assert any(f.id.value == "G2" and f.subject == "flash-attn" for f in judged), judged
    assert declared(flash, bare, index, expected=True) == judged  # taken as kept
    for inp, prof, allowed in ((demo, bare, frozenset()), (flash, ngc, frozenset()), (flash, ngc, {"torch"})):
        got = declared(inp, prof, index, frozenset(allowed), expected=True)
        fresh = policy.judge_declared(
            policy.declared_facts(
                inp.requirements, prof, [index.index_url or ""], staged=True, allow_replace=frozenset(allowed)
            )
        )
        assert got == fresh
    # what is taken is what was kept under those facts, read back whole
    marker = Finding("G9", Status.INFO, "kept under these facts", "demo", ("a",), None)
    facts = policy.declared_facts(demo.requirements, bare, [index.index_url or ""], staged=True)
    judged_cache.keep_declared(judged_cache.key("declared", judged_cache.code_stamp(), facts), [marker])
    assert declared(demo, bare, index, expected=True) == [marker]
    assert declared(demo, bare, index) != [marker]  # not expected: judged
