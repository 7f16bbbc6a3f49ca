"""G10 across nodes, one of rules/g10.py's rules: do all nodes run the same image, lock, driver, CUDA,
torch, NCCL and NCCL settings (compared through the launcher's own store), and what did the optional
link test measure? Pure: the agreement probe's answer in, findings out; every node prints the same
differences."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.knowledge import gate, multinode

if TYPE_CHECKING:
    from sparkenv.environment import digest

G = GotchaId.G10
SUBJECT = "agreement"


def _short(value: Any) -> str:
    text = "unset" if value is None else str(value)
    return text if len(text) <= 40 else text[:19] + "…" + text[-12:]


_SCALAR = (str, int, float, bool, type(None))
_NUMBER = (int, float)


def _is_number(v: Any) -> bool:
    return isinstance(v, _NUMBER) and not isinstance(v, bool) and v == v and abs(v) != float("inf")


def malformed(agreement: Any) -> str | None:
    """What is wrong with the agreement probe's answer, which carries what peers published (anything
    a hostile or broken peer chose); None when every value has the type this rule reads."""
    if not isinstance(agreement, Mapping):
        return "the answer is not a table"
    for key in ("store", "error", "skipped"):
        if not isinstance(agreement.get(key), _SCALAR):
            return f"{key} is not a plain value"
    return _malformed_peers(agreement.get("peers") or {}) or _malformed_tail(agreement)


def _malformed_peers(peers: Any) -> str | None:
    if not isinstance(peers, Mapping):
        return "peers is not a table"
    for key, peer in peers.items():
        if not isinstance(key, str) or not key.isdigit() or len(key) > 6:
            return f"peer key {str(key)[:40]!r} is not a node number"
        problem = _malformed_peer(key, peer)
        if problem:
            return problem
    return None


def _malformed_peer(key: str, peer: Any) -> str | None:
    if not isinstance(peer, Mapping):
        return f"peer {key} is not a table"
    if not isinstance(peer.get("ordinal"), _SCALAR) or not isinstance(peer.get("name", ""), _SCALAR):
        return f"peer {key}'s ordinal or name is not a plain value"
    published = peer.get("digest") or {}
    if not isinstance(published, Mapping):
        return f"peer {key}'s digest is not a table"
    for field, value in published.items():
        if field == "nccl_settings" and not isinstance(value, Mapping | None):
            return f"peer {key}'s nccl_settings is not a table"
        values = value.values() if isinstance(value, Mapping) and field == "nccl_settings" else [value]
        if not all(isinstance(v, _SCALAR) for v in values):
            return f"peer {key}'s {str(field)[:40]} is not a plain value"
    return None


def _malformed_tail(agreement: Mapping[str, Any]) -> str | None:
    """The list of missing nodes and the link test's numbers."""
    missing = agreement.get("missing") or []
    if not isinstance(missing, list) or not all(isinstance(m, _SCALAR) for m in missing):
        return "missing is not a list of node numbers"
    link = agreement.get("link_test")
    if not link:
        return None
    if not isinstance(link, Mapping):
        return "link_test is not a table"
    if not link.get("error"):
        numbers = ("buffer_mib", "world", "busbw_gbs", "iterations", "median_s", "algbw_gbs")
        bad = [k for k in numbers if not _is_number(link.get(k))]
        if bad or not isinstance(link.get("backend"), str):
            return f"link_test's {(bad or ['backend'])[0]} has the wrong type"
    return None


BLOCKS = "; --policy strict starts the workload only when every node agreed"


def check(agreement: Mapping[str, Any] | None, nodes: int, strict: bool = False) -> list[Finding]:
    """The agreement's findings. `strict` (--policy strict in front of a workload): agreement not reached
    — a peer that did not publish, a store that could not be asked, an answer in the wrong shape — is a
    FAIL that blocks the start, with the line saying so; otherwise an ERROR (the check could not run)."""
    if not agreement:
        return []
    unjudged = _not_judged(agreement, nodes)
    if unjudged:
        return [_blocking(unjudged) if strict and unjudged.status is Status.ERROR else unjudged]
    from sparkenv.environment import digest  # only with peers: not on every gate's start

    peers: Mapping[str, Any] = agreement.get("peers") or {}
    diffs = digest.compare(peers)
    ref = peers[min(peers, key=int)] if peers else {}
    out = _disagreements(diffs, ref)
    seen = ", ".join(digest.label(peers[k]) for k in sorted(peers, key=int))
    missing = _missing(agreement)
    if missing:
        late = _late(agreement, nodes, missing, seen)
        out.append(_blocking(late) if strict else late)
    elif not diffs:
        out.append(_agree(agreement, peers, ref, seen))
    ray_test = agreement.get("ray_link_test") or {}
    out += _link_test(agreement.get("link_test") or ray_test.get("torch"), spark=_all_spark(peers))
    out += _ray_transfer(ray_test)
    return out


def _blocking(unreached: Finding) -> Finding:
    """An ERROR about agreement not reached, as strict judges it: a FAIL that says it blocks."""

    return replace(unreached, status=Status.FAIL, summary=unreached.summary + BLOCKS)


def _not_judged(agreement: Mapping[str, Any], nodes: int) -> Finding | None:
    """The one finding when there is nothing to compare: a malformed answer, a skip, or a store error."""
    problem = malformed(agreement)
    if problem:  # judged on nothing a peer sent in the wrong shape: one line saying so, never a crash
        return Finding(
            id=G,
            status=Status.ERROR,
            summary=f"agreement between the {nodes} nodes not judged: a malformed answer ({problem})",
            subject=SUBJECT,
            fix="run the same sparkenv version on every node; a peer that publishes this is not a "
            "sparkenv gate",
        )
    if "skipped" in agreement:
        return Finding(
            id=G,
            status=Status.INFO,
            summary=f"agreement between nodes not checked: {agreement['skipped']}",
            subject=SUBJECT,
        )
    if agreement.get("error"):
        return _store_error(agreement, nodes)
    return None


def _store_error(agreement: Mapping[str, Any], nodes: int) -> Finding:
    store = agreement.get("store", "?")
    ray = str(store).startswith("Ray") or "Ray" in str(agreement.get("error"))
    between = "through the Ray cluster" if ray else f"between the {nodes} nodes"
    return Finding(
        id=G,
        status=Status.ERROR,
        summary=f"agreement {between} could not be checked: {agreement['error']}",
        subject=SUBJECT,
        evidence=(f"store {store}",),
        fix="start the head (`ray start --head`) first, then every node's gate within the deadline "
        "(--deadline), with the head's address ($RAY_ADDRESS, `ray start --address`)"
        if ray
        else "start every node's gate within the deadline (--deadline), with the same master address "
        "and port",
    )


def _missing(agreement: Mapping[str, Any]) -> list[str]:
    missing = [str(m) for m in agreement.get("missing") or []]
    if agreement.get("unseen"):  # under Ray: expected by the launch, not yet in the cluster
        missing.append(f"{agreement['unseen']} more")
    return missing


def _disagreements(diffs: list[digest.Difference], ref: Mapping[str, Any]) -> list[Finding]:
    """One FAIL per field the nodes disagree on, naming every node that differs from the reference."""
    from sparkenv.environment import digest

    by_field: dict[str, list[digest.Difference]] = {}
    for d in diffs:
        by_field.setdefault(d.field, []).append(d)
    out: list[Finding] = []
    for field, items in sorted(by_field.items()):
        text = "; ".join(f"{d.node} has {_short(d.theirs)}" for d in items)
        out.append(
            Finding(
                id=G,
                status=Status.FAIL,
                summary=f"nodes disagree on {field}: {digest.label(ref)} has {_short(items[0].mine)}, {text}",
                subject=f"{SUBJECT}:{field}",
                evidence=tuple(f"{d.node}: {d.theirs!r} vs {d.mine!r}" for d in items),
                fix="run the same image (pull it by digest) with the same lock and settings on every node",
            )
        )
    return out


def _late(agreement: Mapping[str, Any], nodes: int, missing: list[str], seen: str) -> Finding:
    return Finding(
        id=G,
        status=Status.ERROR,
        summary=f"node(s) {', '.join(missing)} of {nodes} did not publish within "
        f"{agreement.get('waited_s', '?')} s; seen: {seen or 'none'}",
        subject=SUBJECT,
        evidence=(f"store {agreement.get('store', '?')}",),
        fix="start every node's gate within the deadline; check the master address and that the port "
        "is open between the nodes",
    )


def _agree(
    agreement: Mapping[str, Any], peers: Mapping[str, Any], ref: Mapping[str, Any], seen: str
) -> Finding:
    fields = multinode().agreement.fields
    unknown = [f for f in fields if (ref.get("digest") or {}).get(f) is None]
    note = f" ({', '.join(unknown)} unknown on all)" if unknown else ""
    return Finding(
        id=G,
        status=Status.PASS,
        summary=f"{len(peers)} nodes agree on {', '.join(f for f in fields if f not in unknown)} and "
        f"NCCL settings{note}",
        subject=SUBJECT,
        evidence=(f"store {agreement.get('store', '?')}", f"seen: {seen}"),
    )


def _ray_transfer(result: Mapping[str, Any]) -> list[Finding]:
    """--link-test under Ray: the time a peer node's task took to pull an object this node put, beside
    the torch.distributed all-reduce between the same tasks (judged by _link_test)."""
    if not result:
        return []
    if result.get("error"):
        return [
            Finding(
                id=G,
                status=Status.ERROR,
                summary=f"link test through Ray failed: {result['error']}",
                subject="link-test:ray",
            )
        ]
    return [
        Finding(
            id=G,
            status=Status.INFO,
            summary=f"Ray object transfer of {result['buffer_mib']} MiB to {result.get('to')}: "
            f"{result['gbs']:g} GB/s (median of {result['iterations']}, {result['median_s'] * 1000:.2f} ms); "
            "Ray's object store, not NCCL: no expectation in the data",
            subject="link-test:ray",
            evidence=(f"set-up {result.get('setup_s')} s",),
        )
    ]


def _all_spark(peers: Mapping[str, Any]) -> bool:
    name = gate().gb10.name_contains
    gpus = [str((p.get("digest") or {}).get("gpu") or "") for p in peers.values()]
    return bool(gpus) and all(name in g for g in gpus)


def _link_test(result: Mapping[str, Any] | None, spark: bool) -> list[Finding]:
    if not result:
        return []
    said = partial(Finding, id=G, subject="link-test")
    if result.get("error"):
        return [
            said(
                status=Status.ERROR, summary=f"link test ({result.get('backend')}) failed: {result['error']}"
            )
        ]
    data = multinode().link_test
    figure = (
        f"{result['backend']} all-reduce of {result['buffer_mib']} MiB across {result['world']} nodes: "
        f"{result['busbw_gbs']:g} GB/s bus bandwidth (median of {result['iterations']}, "
        f"{result['median_s'] * 1000:.2f} ms)"
    )
    said = partial(
        said, evidence=(f"algbw {result['algbw_gbs']:g} GB/s", f"set-up {result.get('setup_s')} s")
    )
    if not result.get("correct", True):
        return [said(status=Status.FAIL, summary=f"{figure}: the sum is wrong")]
    if result["backend"] != "nccl" or not spark:
        return [said(status=Status.INFO, summary=f"{figure}; no expectation for this pair in the data")]
    expected = data.spark_busbw_gbs
    if result["busbw_gbs"] < expected * data.warn_below_fraction:
        return [
            said(
                status=Status.WARN,
                summary=f"{figure}: below {expected * data.warn_below_fraction:g} GB/s (a healthy Spark "
                f"pair reaches ~{expected:g})",
                fix="likely: NCCL_IB_HCA without both halves of the port, a degraded link rate, MTU 1500, "
                "NCCL_IB_DISABLE or a socket fallback (see the G10 link lines above)",
            )
        ]
    return [said(status=Status.PASS, summary=f"{figure}: at or above the expected ~{expected:g} GB/s")]
