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


SAME_IMAGE = "run the same image (pull it by digest) with the same lock and settings on every node"


def test_agreeing_nodes_pass_naming_what_they_compared():
    found = by_subject({"peers": peers(), "missing": []})
    f = found["agreement"]
    assert f.status is Status.PASS
    assert f.summary == (
        "2 nodes agree on sparkenv, image, lock, driver, cuda, torch, nccl, python, machine, gpu and "
        "NCCL settings"
    )
    assert f.evidence == ("store 10.0.0.1:29517", "seen: node 0 (spark-a), node 1 (spark-b)")
    # a field no node knows is said, not passed as agreed
    unknown = peers(lock=None)
    unknown["0"]["digest"]["lock"] = None
    f = by_subject({"peers": unknown, "missing": []})["agreement"]
    assert "agree on sparkenv, image, driver," in f.summary and f.summary.endswith("(lock unknown on all)")


def test_a_long_value_is_shortened_and_every_difference_named_with_the_fix():
    image = "registry.example/team/train@sha256:" + "b" * 64
    f = by_subject({"peers": peers(image=image, driver="580.159.04"), "missing": []})["agreement:image"]
    assert f.status is Status.FAIL and f.fix == SAME_IMAGE
    assert f.summary == (
        "nodes disagree on image: node 0 (spark-a) has r/x@sha256:aaaaaaaa…aaaaaaaaaaaa, "
        "node 1 (spark-b) has registry.example/te…bbbbbbbbbbbb"
    )
    assert f.evidence == (f"node 1 (spark-b): {image!r} vs {'r/x@sha256:' + 'a' * 64!r}",)
    nccl = by_subject({"peers": peers(nccl_settings={}), "missing": []})["agreement:NCCL_IB_HCA"]
    assert nccl.summary.endswith("node 0 (spark-a) has roce, node 1 (spark-b) has unset"), nccl


def test_a_store_error_says_how_to_start_the_gates():
    err = by_subject({"error": "could not reach the store at 10.0.0.1:29517 within 4.7 s"})["agreement"]
    assert err.summary == (
        "agreement between the 2 nodes could not be checked: could not reach the store at 10.0.0.1:29517 "
        "within 4.7 s"
    )
    assert err.evidence == ("store 10.0.0.1:29517",)
    assert err.fix and err.fix.startswith("start every node's gate within the deadline (--deadline)")
    ray = judge_agreement.check({"store": "Ray cluster at 10.0.0.1:6379", "error": "no head"}, 2)[0]
    assert ray.summary.startswith("agreement through the Ray cluster could not be checked: no head")
    assert ray.fix and ray.fix.startswith("start the head (`ray start --head`) first")


def test_a_late_peer_is_told_to_start_within_the_deadline():
    f = by_subject({"peers": {}, "missing": [1], "unseen": 2})["agreement"]
    assert f.summary == "node(s) 1, 2 more of 2 did not publish within ? s; seen: none"
    assert f.fix and f.fix.startswith("start every node's gate within the deadline; check the master address")
    assert f.evidence == ("store 10.0.0.1:29517",)


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"store": ["x"]}, "store is not a plain value"),
        ({"error": {"x": 1}}, "error is not a plain value"),
        ({"skipped": ["x"]}, "skipped is not a plain value"),
        ({"peers": ["0"]}, "peers is not a table"),
        ({"peers": {"x": {}}}, "peer key 'x' is not a node number"),
        ({"peers": {"1234567": {}}}, "peer key '1234567' is not a node number"),
        ({"peers": {"0": 1}}, "peer 0 is not a table"),
        ({"peers": {"0": {"ordinal": [0]}}}, "peer 0's ordinal or name is not a plain value"),
        ({"peers": {"0": {"ordinal": 0, "name": {}}}}, "peer 0's ordinal or name is not a plain value"),
        ({"peers": {"0": {"ordinal": 0, "digest": [1]}}}, "peer 0's digest is not a table"),
        ({"peers": {"0": {"ordinal": 0, "digest": {"nccl_settings": "x"}}}}, "peer 0's nccl_settings is not"),
        ({"peers": {"0": {"ordinal": 0, "digest": {"nccl_settings": {"A": []}}}}}, "peer 0's nccl_settings"),
        ({"peers": {"0": {"ordinal": 0, "digest": {"driver": {}}}}}, "peer 0's driver is not a plain value"),
        ({"missing": "1"}, "missing is not a list of node numbers"),
        ({"missing": [[1]]}, "missing is not a list of node numbers"),
        ({"link_test": [1]}, "link_test is not a table"),
        ({"link_test": {**link(3.0), "busbw_gbs": float("nan")}}, "link_test's busbw_gbs has the wrong type"),
        ({"link_test": {**link(3.0), "world": True}}, "link_test's world has the wrong type"),
        ({"link_test": {**link(3.0), "median_s": float("inf")}}, "link_test's median_s has the wrong type"),
        ({"link_test": {**link(3.0), "backend": 1}}, "link_test's backend has the wrong type"),
    ],
)
def test_a_malformed_answer_is_one_error_naming_the_problem(answer, problem):
    [f] = judge_agreement.check({"store": "10.0.0.1:29517", **answer}, 2)
    assert f.status is Status.ERROR and f.subject == "agreement"
    assert f.summary.startswith(f"agreement between the 2 nodes not judged: a malformed answer ({problem}")
    assert f.fix == (
        "run the same sparkenv version on every node; a peer that publishes this is not a sparkenv gate"
    )
    [strict] = judge_agreement.check({"store": "10.0.0.1:29517", **answer}, 2, strict=True)
    assert strict.status is Status.FAIL and strict.summary.endswith("only when every node agreed")


def test_a_failed_link_test_with_its_error_still_judges_the_rest():
    [f] = [
        f
        for f in judge_agreement.check(
            {"peers": peers(), "missing": [], "link_test": {"backend": "nccl", "error": "timeout"}}, 2
        )
        if f.subject == "link-test"
    ]
    assert f.status is Status.ERROR and f.summary == "link test (nccl) failed: timeout"


def test_link_test_figures_and_evidence():
    f = by_subject({"peers": peers(), "missing": [], "link_test": link(3.0)})["link-test"]
    assert f.summary.startswith(
        "nccl all-reduce of 64 MiB across 2 nodes: 3 GB/s bus bandwidth (median of 20, 6.00 ms): "
        "below 10 GB/s (a healthy Spark pair reaches ~20)"
    )
    assert f.evidence == ("algbw 3 GB/s", "set-up 0.4 s")
    assert f.fix and f.fix.startswith("likely: NCCL_IB_HCA without both halves of the port")
    # exactly at the threshold: not below it
    assert by_subject({"peers": peers(), "missing": [], "link_test": link(10.0)})["link-test"].status is (
        Status.PASS
    )


def test_ray_link_test_reports_torch_and_the_object_transfer():
    ray = {
        "torch": link(22.5),
        "buffer_mib": 64,
        "to": "node 1",
        "gbs": 1.5,
        "iterations": 5,
        "median_s": 0.04,
        "setup_s": 2.0,
    }
    found = by_subject({"peers": peers(), "missing": [], "ray_link_test": ray})
    assert found["link-test"].status is Status.PASS
    t = found["link-test:ray"]
    assert t.status is Status.INFO
    assert t.summary.startswith("Ray object transfer of 64 MiB to node 1: 1.5 GB/s (median of 5, 40.00 ms)")
    assert t.evidence == ("set-up 2.0 s",)
    err = by_subject({"peers": peers(), "missing": [], "ray_link_test": {"error": "no GPU on the peer"}})
    assert err["link-test:ray"].status is Status.ERROR
    assert err["link-test:ray"].summary == "link test through Ray failed: no GPU on the peer"


def test_no_answer_no_findings_and_a_skip_says_why():
    assert judge_agreement.check(None, 2) == [] and judge_agreement.check({}, 2) == []
    f = by_subject({"skipped": "one node"})["agreement"]
    assert f.summary == "agreement between nodes not checked: one node" and f.fix is None
