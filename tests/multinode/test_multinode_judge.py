"""G10 agreement and link-test judgements on the agreement probe's answers (the shape store_agent.py
prints, as recorded from real runs in tests/multinode/test_multinode_agree.py and on the H200)."""

from __future__ import annotations

import pytest

from sparkenv.core.report import Status
from sparkenv.rules import g10_agreement as judge_agreement


def peers(gpu: str = "NVIDIA GB10", **changes: str) -> dict:
    base = {
        "sparkenv": "0.1.0",
        "image": "r/x@sha256:" + "a" * 64,
        "lock": "sha256:" + "1" * 64,
        "driver": "580.95.05",
        "cuda": "13.0",
        "torch": "2.9.0a0+nv25.11",
        "nccl": "2.28.9",
        "python": "3.12.3",
        "machine": "aarch64",
        "gpu": gpu,
        "nccl_settings": {"NCCL_IB_HCA": "roce"},
    }
    theirs = {**base, **changes}
    return {
        "0": {"ordinal": 0, "name": "spark-a", "digest": base},
        "1": {"ordinal": 1, "name": "spark-b", "digest": theirs},
    }


def link(busbw: float, backend: str = "nccl", correct: bool = True) -> dict:
    return {
        "backend": backend,
        "world": 2,
        "buffer_mib": 64,
        "iterations": 20,
        "median_s": 0.006,
        "algbw_gbs": busbw,
        "busbw_gbs": busbw,
        "setup_s": 0.4,
        "correct": correct,
    }


def by_subject(agreement: dict) -> dict:
    return {f.subject: f for f in judge_agreement.check({"store": "10.0.0.1:29517", **agreement}, 2)}


def test_a_driver_difference_names_both_nodes_and_values():
    found = by_subject({"peers": peers(driver="580.159.04"), "missing": []})
    f = found["agreement:driver"]
    assert f.status is Status.FAIL
    assert f.summary == (
        "nodes disagree on driver: node 0 (spark-a) has 580.95.05, node 1 (spark-b) has 580.159.04"
    )
    assert "agreement" not in found  # no PASS beside a difference


@pytest.mark.parametrize(
    ("result", "spark", "status", "words"),
    [
        (link(3.0), True, Status.WARN, "below 10 GB/s"),
        (link(22.5), True, Status.PASS, "at or above the expected ~20 GB/s"),
        (link(3.0), False, Status.INFO, "no expectation"),
        (link(0.5, "gloo"), True, Status.INFO, "no expectation"),
        (link(22.5, correct=False), True, Status.FAIL, "the sum is wrong"),
        (
            {"backend": "nccl", "error": "DistBackendError: …; NCCL: Duplicate GPU detected"},
            True,
            Status.ERROR,
            "Duplicate GPU",
        ),
    ],
)
def test_link_test_against_the_expected_bandwidth(result, spark, status, words):
    gpu = "NVIDIA GB10" if spark else "NVIDIA H200"
    f = by_subject({"peers": peers(gpu=gpu), "missing": [], "link_test": result})["link-test"]
    assert f.status is status and words in f.summary + (f.fix or "")
    if status is Status.WARN:
        assert "NCCL_IB_HCA" in (f.fix or "")


def test_skipped_and_failed_exchanges_say_why():
    assert by_subject({"skipped": "under Ray: …"})["agreement"].status is Status.INFO
    err = by_subject({"error": "could not reach the store at 10.0.0.1:29517 within 4.7 s"})["agreement"]
    assert err.status is Status.ERROR and "10.0.0.1:29517" in err.summary
    missing = by_subject({"peers": {"0": peers()["0"]}, "missing": [1], "waited_s": 4.6})["agreement"]
    assert missing.status is Status.ERROR and "node(s) 1 of 2 did not publish within 4.6 s" in missing.summary


@pytest.mark.parametrize("strict", [False, True])
def test_a_peer_that_did_not_publish_blocks_only_under_strict(strict):
    """The README: under --policy strict the workload starts only when both Sparks agree. A peer that
    never published was an ERROR, which strict lets through; now strict makes it a FAIL saying so."""
    agreement = {"store": "10.0.0.1:29517", "peers": {"0": peers()["0"]}, "missing": [1], "waited_s": 6}
    [f] = judge_agreement.check(agreement, 2, strict=strict)
    assert f.summary.startswith("node(s) 1 of 2 did not publish within 6 s; seen: node 0 (spark-a)")
    if strict:
        assert f.status is Status.FAIL
        assert f.summary.endswith("--policy strict starts the workload only when every node agreed")
    else:
        assert f.status is Status.ERROR


@pytest.mark.parametrize("strict", [False, True])
def test_a_store_that_could_not_be_asked_blocks_under_strict(strict):
    agreement = {"store": "10.0.0.1:29517", "error": "could not reach the store at 10.0.0.1:29517"}
    [f] = judge_agreement.check(agreement, 2, strict=strict)
    assert f.status is (Status.FAIL if strict else Status.ERROR)
    assert ("every node agreed" in f.summary) is strict
