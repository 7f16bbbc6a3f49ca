"""rules/g5.py and rules/g8.py (G5, G8): the words each verdict gives and the edges where they change —
a measured bandwidth at 90 % of the GB10's sustained budget (data/gate.toml) and the evidence of the copy
that measured it; the known playbook issues (data/playbook_issues.toml) matched against the installed
versions, every distribution an entry names required, pre-releases counted. Rows start from snapshots
recorded on real machines and the GB10's public reports (tests/fixtures/facts)."""

from __future__ import annotations

import stage_facts as sf

from sparkenv.core.report import GotchaId, Status
from sparkenv.knowledge import gate, playbook_issues
from sparkenv.rules import g5, g8

B = gate().bandwidth
BUDGET = f"{B.measured_low:g}–{B.measured_high:g} GB/s"
ISSUES = playbook_issues()


def g5_of(f):
    [got] = g5.live(f)
    assert (got.id, got.subject) == (GotchaId.G5, "bandwidth")
    return got


def measured(base, gbps, size=1 << 30, iters=5):
    return sf.live_raw(base, torch__stages__bandwidth={"gb_per_s": gbps, "bytes": size, "iters": iters})


def test_measured_on_a_gb10_against_nine_tenths_of_its_budget():
    low = 0.9 * B.measured_low
    slow = g5_of(measured("gb10", low - 0.5, size=3 << 29, iters=7))
    assert slow.status is Status.WARN
    assert slow.summary == f"measured {low - 0.5:g} GB/s, below the {BUDGET} a GB10 sustains"
    assert slow.evidence == ("device copy of 1536 MiB, median of 7",)
    assert slow.fix == "look for other GPU work (G6) or throttling (G4)"
    edge = g5_of(measured("gb10", low))
    assert (edge.status, edge.fix) == (Status.INFO, None)
    assert edge.summary == f"measured {low:g} GB/s device copy (GB10 budget {BUDGET})"
    assert edge.evidence == ("device copy of 1024 MiB, median of 5",)


def test_measured_on_another_gpu_is_named_by_it():
    slow = g5_of(measured("h200-static", 100.0))
    assert slow.status is Status.INFO
    assert slow.summary == f"measured 100 GB/s device copy (NVIDIA H200; GB10 budget is {BUDGET})"
    f = measured("h200-static", 100.0)
    f.raw["gpu"]["gpus"][0].pop("name")
    assert "(this GPU; GB10 budget is" in g5_of(f).summary


def test_not_measured():
    gb10 = g5_of(sf.live_raw("gb10"))
    assert (
        gb10.summary
        == f"plan with {BUDGET} sustained, not the {B.spec:g} GB/s spec (--bandwidth measures it)"
    )
    other = g5_of(sf.live_raw("h200-static"))
    assert (other.status, other.summary) == (
        Status.INFO,
        f"not a GB10: its budget is {BUDGET}; --bandwidth measures this GPU",
    )
    zero = g5_of(measured("h200-static", 0))
    assert zero.summary.startswith("not a GB10")
    none = g5_of(sf.live_raw("h200-static", gpu={"available": False, "gpus": []}, torch_static=None))
    assert (none.status, none.summary) == (
        Status.SKIP,
        f"no GPU: nothing to measure (a GB10 sustains {BUDGET})",
    )


# --- G8 -------------------------------------------------------------------------------------------------


def g8_of(dists):
    f = sf.live_raw("h200-static")
    f.raw["dists"] = dists
    found = g8.live(f)
    assert all(x.id is GotchaId.G8 for x in found)
    return found


def test_an_issue_applies_when_every_named_version_matches():
    found = g8_of({"bitsandbytes": "0.49.1", "unsloth": "2026.1.4", "peft": "0.19.1"})
    by = {f.subject: f for f in found}
    f = by["playbooks#57"]
    assert f.status is Status.INFO
    assert f.summary == (
        "playbooks#57 (bitsandbytes 0.49.1, unsloth 2026.1.4): 'Parameter' object has no attribute "
        f"'compress_statistics' (bitsandbytes 0.49.1 with Unsloth 2026.1.4) [list of {ISSUES.as_of}]"
    )
    assert f.evidence == (ISSUES.repository,)
    assert f.fix == "use bitsandbytes 0.49.2 or newer (or 0.48.x) with Unsloth"
    assert "playbooks#50" in by and "playbooks#15/#19" not in by  # trl not installed
    assert "playbooks#57" not in {x.subject for x in g8_of({"bitsandbytes": "0.49.2", "unsloth": "2026.1.4"})}


def test_a_pre_release_counts_and_a_bad_version_does_not_match():
    assert "playbooks#15/#19" in {x.subject for x in g8_of({"unsloth": "1", "trl": "0.27.0rc1"})}
    assert "playbooks#15/#19" not in {x.subject for x in g8_of({"unsloth": "1", "trl": "0.26.1"})}
    assert "playbooks#15/#19" not in {x.subject for x in g8_of({"unsloth": "1", "trl": "not-a-version"})}


def test_nothing_matches():
    [f] = g8_of({"numpy": "2.3.0"})
    assert (f.status, f.subject) == (Status.PASS, "playbooks")
    assert f.summary == (
        f"no known playbook issue matches the installed packages [list of {ISSUES.as_of}; check "
        f"{ISSUES.repository} for newer ones]"
    )


def test_installed_packages_unknown_is_an_error():
    f = sf.live_raw("h200-static", dists=None, probe_errors={"dists": "importlib.metadata failed"})
    [got] = g8.live(f)
    assert (got.status, got.subject) == (Status.ERROR, "playbooks")
    assert got.summary == (
        "installed packages unknown (importlib.metadata failed); known-issue list of "
        f"{ISSUES.as_of} not matched"
    )
