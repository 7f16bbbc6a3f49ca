"""rules/g3.py (G3): the words each verdict gives and the edges where they change — MemAvailable against
--need-gb, the page cache against its share of MemTotal (data/gate.toml), what torch and nvidia-smi say
on a GB10; over a watched run, the time to exhaustion at its warn and fail lines, the trend's minimum span
and pace, the page cache against MemFree, memory stalls at their limits (data/watch.toml). Live rows start
from the H200 snapshot recorded on a real machine and the GB10's public reports (tests/fixtures/facts);
watch rows from stage_facts series."""

from __future__ import annotations

import stage_facts as sf

from sparkenv.core.report import GotchaId, Status
from sparkenv.knowledge import gate
from sparkenv.knowledge import watch as watch_data
from sparkenv.rules import g3

GIB = 1 << 20  # kB
W = watch_data()
DROP = "between runs, as root: sync; echo 3 > /proc/sys/vm/drop_caches (sparkenv never does it itself)"
EXHAUST = (
    "free memory now (stop other jobs, lower batch or context size); on unified memory the host can wedge "
    "before the OOM killer acts"
)
H200 = "MemAvailable 125.4 GiB of 125.8 GiB; page cache 0.9 GiB"


def live(base="h200-static", need_gb=0.0, **edits):
    [f] = g3.live(sf.live_raw(base, need_gb, **edits))
    assert (f.id, f.subject) == (GotchaId.G3, "memory")
    return f


def test_memory_reported_with_its_evidence():
    f = live()
    assert (f.status, f.summary, f.fix) == (Status.INFO, H200, None)
    assert f.evidence == (
        "MemTotal 125.8 GiB",
        "MemAvailable 125.4 GiB",
        "page cache (Cached+Buffers) 0.9 GiB",
    )


def test_below_need_gb_and_at_it():
    short = live(need_gb=126)
    assert short.status is Status.WARN
    assert short.summary == f"{H200}: below the 126 GiB this run needs"
    assert short.fix == f"free memory first: stop other jobs; {DROP}"
    assert short.evidence == (
        "MemTotal 125.8 GiB",
        "MemAvailable 125.4 GiB",
        "page cache (Cached+Buffers) 0.9 GiB",
    )
    assert live(need_gb=131442272 / GIB).status is Status.INFO


def test_page_cache_past_its_share():
    share = gate().memory.page_cache_warn_fraction
    over = int(share * 131961788) + 1 - 13624
    f = live(meminfo__Cached=over)
    assert f.status is Status.WARN and f.fix == DROP
    assert f.summary.endswith(": the page cache holds memory the GPU may need")
    assert f.evidence[2] == f"page cache (Cached+Buffers) {(over + 13624) / GIB:.1f} GiB"
    assert live(meminfo__Cached=over - 1).status is Status.INFO


def test_gb10_evidence_says_what_nvidia_smi_and_torch_show():
    meminfo = {"MemTotal": 128 * GIB, "MemAvailable": 100 * GIB, "Cached": GIB}
    f = sf.live_raw("gb10", meminfo=meminfo, probe_errors={})
    f.raw["torch"]["stages"]["first_op"]["mem_get_info"] = [100 * 2**30, 119 * 2**30]
    [got] = g3.live(f)
    assert got.evidence[3:] == (
        "nvidia-smi shows memory as Not Supported / [N/A]: expected on GB10 (unified memory)",
        "torch.cuda.mem_get_info: 100.0 GiB free of 119.0 GiB",
    )
    assert got.summary == "MemAvailable 100.0 GiB of 128.0 GiB; page cache 1.0 GiB"
    # a GB10 whose nvidia-smi does report a memory total: the note that it shows none would be false
    f.raw["smi"]["gpus"][0]["memory.total"] = 122572
    [reported] = g3.live(f)
    assert not [e for e in reported.evidence if e.startswith("nvidia-smi shows memory")], reported.evidence


def test_meminfo_missing_or_not_read():
    f = live(meminfo={"MemTotal": 0, "MemAvailable": 5})
    assert (f.status, f.summary) == (Status.ERROR, "/proc/meminfo has no MemTotal/MemAvailable")
    assert live(meminfo={"MemTotal": 5}).status is Status.ERROR
    assert live(meminfo={"MemTotal": 5, "MemAvailable": 0}).status is Status.INFO  # nothing left is a reading
    probe = live(meminfo=None, probe_errors={"meminfo": "permission denied"})
    assert probe.status is Status.ERROR and "permission denied" in probe.summary


# --- Stage.WATCH -------------------------------------------------------------------------------------------


def watch(s, subject):
    mine = [f for f in g3.watch(s) if f.subject == subject]
    assert len(mine) == 1, g3.watch(s)
    return mine[0]


def falling(left_gib: float, mib_s: float, n: int = 30, every: float = 2.0):
    """MemAvailable falling `mib_s` a second, `left_gib` left at the last reading."""
    last = (n - 1) * every
    return sf.series(
        n, every, mem=lambda i: {"mem_available_kb": int(left_gib * GIB + mib_s * 1024 * (last - i * every))}
    )


def test_time_to_exhaustion_at_the_fail_and_warn_lines():
    m = W.memory
    # 100 MiB/s: exhaustion in seconds = left MiB / 100
    fail = watch(falling(m.eta_fail_s * 100 / 1024, 100), "memory exhaustion")
    assert fail.status is Status.FAIL and fail.fix == EXHAUST
    assert fail.summary.endswith(f"falling 100 MiB/s: exhausted in ~{m.eta_fail_s:.0f} s at this rate")
    assert fail.summary.startswith("MemAvailable 11.7 GiB of 125.8 GiB, falling")
    warn = watch(falling(m.eta_warn_s * 100 / 1024, 100), "memory exhaustion")
    assert warn.status is Status.WARN and warn.fix == EXHAUST
    assert warn.summary.endswith(f"exhausted in ~{m.eta_warn_s:.0f} s at this rate")
    later = watch(falling(m.eta_warn_s * 100 / 1024 + 1, 100), "memory exhaustion")
    assert (later.status, later.summary) == (
        Status.PASS,
        "MemAvailable 88.9 GiB of 125.8 GiB, not running out",
    )


def test_a_trend_needs_its_span_and_its_pace():
    m = W.memory
    short = falling(10, 100, n=3, every=(m.min_trend_s - 0.1) / 2)  # 10 GiB left: ~100 s at this pace
    assert watch(short, "memory exhaustion").status is Status.PASS
    spanned = falling(10, 100, n=3, every=m.min_trend_s / 2)
    assert watch(spanned, "memory exhaustion").status is Status.FAIL
    two = falling(10, 100, n=2, every=m.min_trend_s)
    assert watch(two, "memory exhaustion").status is Status.PASS
    slow = falling(10, (m.min_fall_kb_s - 1) / 1024)
    assert watch(slow, "memory exhaustion").summary.endswith("not running out")
    assert g3.eta_seconds(slow, W) is None
    seconds, rate = g3.eta_seconds(falling(10, m.min_fall_kb_s / 1024), W)
    assert abs(rate - m.min_fall_kb_s) < 1 and abs(seconds - 10 * GIB / m.min_fall_kb_s) < 1


def test_little_left_without_a_trend():
    m = W.memory
    total = sf.MEM_H200["mem_total_kb"]
    low = sf.series(10, mem=lambda i: {"mem_available_kb": int(m.available_warn_fraction * total) - 1})
    f = watch(low, "memory exhaustion")
    assert (f.status, f.fix) == (Status.WARN, EXHAUST)
    assert f.summary == f"MemAvailable 6.3 GiB of 125.8 GiB: under {m.available_warn_fraction:.0%} left"
    at = sf.series(10, mem=lambda i: {"mem_available_kb": int(m.available_warn_fraction * total) + 1})
    assert watch(at, "memory exhaustion").status is Status.PASS


def test_page_cache_against_memfree():
    m = W.memory
    total = sf.MEM_H200["mem_total_kb"]
    cache, free = int(m.page_cache_fraction * total) + 1, int(m.free_low_fraction * total) - 1
    f = watch(sf.series(5, mem=lambda i: {"page_cache_kb": cache, "mem_free_kb": free}), "page cache")
    assert (f.status, f.fix) == (Status.WARN, DROP)
    assert (
        f.summary
        == "page cache 31.5 GiB, MemFree 12.6 GiB of 125.8 GiB: the cache holds memory the GPU may need"
    )
    plenty_free = sf.series(5, mem=lambda i: {"page_cache_kb": cache, "mem_free_kb": free + 2})
    assert watch(plenty_free, "page cache").status is Status.PASS
    small = sf.series(5, mem=lambda i: {"page_cache_kb": cache - 2, "mem_free_kb": free})
    ok = watch(small, "page cache")
    assert (ok.status, ok.summary) == (Status.PASS, "page cache 31.5 GiB, MemFree 12.6 GiB of 125.8 GiB")
    unread = watch(sf.series(5, mem=lambda i: {"page_cache_kb": None}), "page cache")
    assert (unread.status, unread.summary) == (Status.SKIP, "no page cache reading")


def test_memory_stalls_at_their_limits():
    p = W.pressure
    full = watch(
        sf.series(5, mem=lambda i: {"psi_some_avg10": 70.0, "psi_full_avg10": p.full_fail}), "memory pressure"
    )
    assert (full.status, full.fix, full.evidence) == (Status.FAIL, EXHAUST, (p.source,))
    assert full.summary == (
        f"memory stalls (PSI avg10): some 70 %, full {p.full_fail:g} %: at systemd-oomd's default limit, "
        "where it kills the cgroup"
    )
    some = watch(
        sf.series(5, mem=lambda i: {"psi_some_avg10": p.some_warn, "psi_full_avg10": 1.5}), "memory pressure"
    )
    assert (some.status, some.fix) == (Status.WARN, EXHAUST)
    assert (
        some.summary
        == f"memory stalls (PSI avg10): some {p.some_warn:g} %, full 1.5 %: the run is waiting on memory"
    )
    calm = watch(
        sf.series(5, mem=lambda i: {"psi_some_avg10": p.some_warn - 0.1, "psi_full_avg10": 0.0}),
        "memory pressure",
    )
    assert (calm.status, calm.summary) == (
        Status.PASS,
        f"memory stalls (PSI avg10): some {p.some_warn - 0.1:g} %, full 0 %",
    )
    no_psi = watch(sf.series(5, mem=lambda i: {"psi_full_avg10": None}), "memory pressure")
    assert no_psi.summary == "no /proc/pressure/memory (a kernel without PSI)"


def test_no_meminfo_in_the_record():
    for s in (sf.series(0), sf.series(3, mem=lambda i: {"mem_available_kb": None})):
        assert [(f.status, f.subject, f.summary) for f in g3.watch(s)] == [
            (Status.SKIP, "memory exhaustion", "no /proc/meminfo readings in the record")
        ]


def test_watch_shares_are_strict_at_the_line():
    """The shares are strict ("under 5 % left", MemFree below 10 %): exactly at the share is not yet a
    warning. On a 100 GiB machine both lines fall on a whole kB, so the reading can sit exactly on them."""
    m = W.memory
    total = 100 * GIB
    avail_line, free_line = m.available_warn_fraction * total, m.free_low_fraction * total
    assert avail_line.is_integer() and free_line.is_integer(), "pick a MemTotal where the lines are whole kB"
    at = sf.series(10, mem=lambda i: {"mem_total_kb": total, "mem_available_kb": int(avail_line)})
    assert watch(at, "memory exhaustion").summary == "MemAvailable 5.0 GiB of 100.0 GiB, not running out"
    under = sf.series(10, mem=lambda i: {"mem_total_kb": total, "mem_available_kb": int(avail_line) - 1})
    assert watch(under, "memory exhaustion").status is Status.WARN
    cache = int(m.page_cache_fraction * total) + 1

    def cached(free):
        return sf.series(
            5, mem=lambda i: {"mem_total_kb": total, "page_cache_kb": cache, "mem_free_kb": free}
        )

    assert watch(cached(int(free_line)), "page cache").status is Status.PASS
    assert watch(cached(int(free_line) - 1), "page cache").fix == DROP
    cache_line = m.page_cache_fraction * total
    assert cache_line.is_integer(), "pick a MemTotal where the line is a whole kB"
    at_cache = sf.series(
        5, mem=lambda i: {"mem_total_kb": total, "page_cache_kb": int(cache_line), "mem_free_kb": 0}
    )
    assert watch(at_cache, "page cache").status is Status.PASS


def test_a_late_short_fall_is_no_trend_and_a_fast_one_is_said_in_mib():
    """Readings of MemAvailable only in the run's last seconds: a fall over less than the trend's minimum
    span is not estimated, however late in the run it comes. The pace is said in MiB/s."""
    m = W.memory
    last = 29 * 2.0

    def late(span_s, mib_s=500.0):
        first = last - span_s
        return sf.series(
            30,
            mem=lambda i: {
                "mem_available_kb": int(10 * GIB + mib_s * 1024 * (last - 2.0 * i))
                if 2.0 * i >= first
                else None
            },
        )

    short = watch(late(m.min_trend_s - 2), "memory exhaustion")
    assert (short.status, short.summary) == (
        Status.PASS,
        "MemAvailable 10.0 GiB of 125.8 GiB, not running out",
    )
    spanned = watch(late(m.min_trend_s), "memory exhaustion")
    assert spanned.status is Status.FAIL and ", falling 500 MiB/s: exhausted in ~20 s" in spanned.summary
    fast = watch(falling(100, 1000), "memory exhaustion")
    assert ", falling 1000 MiB/s: exhausted in ~102 s at this rate" in fast.summary
