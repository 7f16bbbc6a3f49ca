"""The watcher: reads the machine every `interval` seconds while the watched process lives, judges G3,
G4 and G6 over the readings (rules, Stage.WATCH), says each condition once on stderr, keeps the record,
the metrics textfile and the plot, and ends with a summary when the process is gone.

It holds no CUDA context (NVML only) and sleeps between readings. It learns of the end at once through a
pidfd (Linux ≥ 5.3), otherwise at the next reading. Memory stays bounded on a long run: the last window
is kept whole, older readings are thinned (the first is always kept), events are kept as said.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from sparkenv import rules
from sparkenv.core import outputs, signals
from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.facts.timeseries import Sample, Series, clock
from sparkenv.knowledge import watch as limits
from sparkenv.rules.g3 import eta_seconds
from sparkenv.watch import metrics, plot
from sparkenv.watch.announce import Announcer, line
from sparkenv.watch.metrics import NAME
from sparkenv.watch.record import Recorder
from sparkenv.watch.sampler import Sampler

PLOT_EVERY_S = 60.0  # the plot is rewritten this often too: a power-off leaves the last one
HISTORY = 2000  # readings older than the window kept at most (thinned evenly)
# Conditions that --watch-policy stop acts on: FAIL only, each said with its reason.
STOP_ON = {("G3", "memory exhaustion"), ("G3", "memory pressure")}
STOP_ON_SUFFIX = " temperature"  # G4 "gpuN temperature"


@dataclass
class Options:
    pid: int
    folder: str
    interval_s: float
    policy: str = "report"
    workload: list[str] = field(default_factory=list)
    fsync_s: float | None = None
    stream: TextIO | None = None


@dataclass
class Outputs:
    record: str
    metrics: str
    plot: str


def names(folder: str, pid: int, started: float) -> Outputs:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    base = os.path.join(folder, f"watch-{stamp}-{pid}")

    return Outputs(record=base + ".jsonl", metrics=os.path.join(folder, NAME), plot=base + ".svg")


class Watcher:
    def __init__(self, o: Options) -> None:

        self.o = o
        self.w = limits()
        self.out = o.stream or sys.stderr
        self.t0 = time.monotonic()
        cpu_start = time.process_time()
        self.started = time.time()
        self.files = names(o.folder, o.pid, self.started)
        self.sampler = Sampler(o.pid)
        self.gb10 = bool(self.sampler.name and "GB10" in self.sampler.name)
        header = {
            "started": round(self.started, 3),
            "pid": o.pid,
            "workload": o.workload,
            "interval_s": o.interval_s,
            "policy": o.policy,
            "gpu": self.sampler.name,
            "gb10": self.gb10,
            "pids_local": self.sampler.pids_local,
            "nvml": self.sampler.error or "ok",
            "host": os.uname().nodename,
        }
        self.recorder = Recorder(self.files.record, header, o.fsync_s or self.w.sampling.fsync_s)
        self.history: list[Sample] = []
        self.announcer = Announcer()
        self.events: list[dict[str, Any]] = []
        self.findings: list[Finding] = []
        self.stopped_workload: str | None = None
        self.last_plot = 0.0
        self.last_metrics = -1e9
        self.readings = 0
        self.cpu0 = time.process_time()  # the readings' cost, after NVML's start (said apart)
        self.start_cpu = self.cpu0 - cpu_start

    # --- the loop -------------------------------------------------------------------------------
    def run(self) -> int:
        gone = _Gone(self.o.pid)
        nvml = "" if self.sampler.error is None else f"; {self.sampler.error}: memory only"
        self.say(
            f"sparkenv watch: watching pid {self.o.pid} every {self.o.interval_s:g} s (G3, G4, G6 over "
            f"time); record {self.files.record}{nvml}"
        )
        try:
            while not gone.now():
                began = time.monotonic()
                self.step()
                if gone.wait(max(0.05, self.o.interval_s - (time.monotonic() - began))):
                    break
        finally:
            gone.close()
            self.finish()
        return 0

    def step(self) -> None:
        sample = self.sampler.read(self.t0)
        self.readings += 1
        self.recorder.sample(sample)
        self.keep(sample)
        series = self.series()
        self.findings = rules.evaluate(rules.Stage.WATCH, series, (GotchaId.G3, GotchaId.G4, GotchaId.G6))
        for f, text in self.announcer.update(self.findings, sample.t):
            event = {
                "t": sample.t,
                "id": str(f.id),
                "status": f.status.value,
                "subject": f.subject,
                "line": text,
            }
            self.events.append(event)
            self.recorder.append({"event": event}, sync=f.status is Status.FAIL)
            self.say(text)
            self.maybe_stop(f)
        if sample.t - self.last_metrics >= self.recorder.fsync_s:  # the textfile at the record's rate
            self.last_metrics = sample.t
            self.write_metrics(sample, series)
        if sample.t - self.last_plot >= PLOT_EVERY_S:
            self.write_plot(series)

    def keep(self, sample: Sample) -> None:
        self.history.append(sample)
        if len(self.history) <= 2 * HISTORY:  # cheap on most readings: thin in steps
            return
        cut = sample.t - 2 * self.w.sampling.window_s
        old = [s for s in self.history[1:] if s.t < cut]
        if len(old) > HISTORY:  # thin the old part to half, keeping the first reading
            recent = self.history[1 + len(old) :]
            self.history = [self.history[0], *old[1::2], *recent]

    def series(self) -> Series:
        return Series(tuple(self.history), gb10=self.gb10, pids_local=self.sampler.pids_local)

    # --- actions and outputs ----------------------------------------------------------------------
    def maybe_stop(self, f: Finding) -> None:
        key = (str(f.id), f.subject)
        acts = key in STOP_ON or (key[0] == "G4" and key[1].endswith(STOP_ON_SUFFIX))
        if self.o.policy != "stop" or f.status is not Status.FAIL or not acts or self.stopped_workload:
            return
        try:
            os.kill(self.o.pid, signal.SIGTERM)
        except OSError as exc:
            self.say(f"sparkenv watch: could not stop pid {self.o.pid}: {exc.strerror}")
            return
        self.stopped_workload = f"{f.id} {f.subject}: {f.summary}"
        self.say(
            f"sparkenv watch: sent SIGTERM to pid {self.o.pid} (--watch-policy stop) because {f.id} "
            f"{f.status.value}: {f.summary}"
        )
        self.recorder.append(
            {"event": {"t": self.history[-1].t, "action": "SIGTERM", "why": f.summary}}, sync=True
        )

    def write_metrics(self, sample: Sample, series: Series) -> None:

        eta = eta_seconds(series.window(self.w.sampling.window_s), self.w)
        self._write(self.files.metrics, metrics.render(sample, self.findings, eta[0] if eta else None))

    def write_plot(self, series: Series) -> None:

        self.last_plot = series.last.t if series.last else 0.0
        title = f"sparkenv watch: pid {self.o.pid} {' '.join(self.o.workload)[:80]}".rstrip()
        self._write(self.files.plot, plot.render(series, self.events, title))

    def _write(self, path: str, text: str) -> None:

        with contextlib.suppress(OSError, outputs.OutputError):  # a full disk must not end the watch
            outputs.write_one(path, text)

    def finish(self) -> None:
        series = self.series()
        if series.last is not None:
            self.write_metrics(series.last, series)
            self.write_plot(series)
        cpu = time.process_time() - self.cpu0
        took = time.monotonic() - self.t0
        share = cpu / took if took > 0 else 0.0
        said = {(e["id"], e["subject"]): e for e in self.events if "id" in e}
        lines = [e["line"] for e in self.events if "line" in e]
        lines += [
            line(f, series.last.t if series.last else 0.0)
            for f in sorted(self.findings, key=lambda f: f.sort_key())
            if (str(f.id), f.subject) not in said
        ]
        summary = {
            "ended": round(time.time(), 3),
            "elapsed_s": round(took, 2),
            "readings": self.readings,
            "watcher_cpu_s": round(cpu, 3),
            "watcher_cpu_share": round(share, 5),
            "watcher_start_cpu_s": round(self.start_cpu, 3),
            "fsyncs": self.recorder.fsyncs,
            "stopped_workload": self.stopped_workload,
            "lines": lines,
        }
        self.recorder.append({"summary": summary}, sync=True)
        self.recorder.close()
        self.sampler.close()
        self.say(
            f"sparkenv watch: pid {self.o.pid} ended after {clock(took)}; {self.readings} readings; "
            f"watcher CPU {cpu:.2f} s ({share:.2%} of one core; {self.start_cpu:.2f} s more to start); "
            f"record {self.files.record}, "
            f"plot {self.files.plot}"
        )
        for text in lines:
            self.say(text)

    def say(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.out.write(" ".join(text.split()) + "\n")
            self.out.flush()


class _Gone:
    """Whether the watched process has ended: a pidfd where the kernel has them (readable at its exit,
    zombie or reaped), else its /proc entry (a zombie counts as ended)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.fd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self.fd = os.pidfd_open(pid)  # type: ignore[attr-defined]

    def now(self) -> bool:
        if self.fd is not None:
            return bool(select.select([self.fd], [], [], 0)[0])
        return _ended(self.pid)

    def wait(self, seconds: float) -> bool:
        if self.fd is not None:
            return bool(select.select([self.fd], [], [], seconds)[0])
        time.sleep(seconds)
        return _ended(self.pid)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _ended(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2 :][:1] in (b"Z", b"X")


def watch(o: Options) -> int:
    """Run the watcher to the end of the watched process. SIGTERM/SIGINT/SIGHUP end it early, with its
    summary; the workload is not touched."""
    w = Watcher(o)

    def stop(signum: int, _frame: Any) -> None:
        raise _Stop(signum)

    signals.install_handler(stop, (signal.SIGTERM, signal.SIGINT, signal.SIGHUP))
    try:
        return w.run()
    except _Stop as exc:
        return 128 + exc.signum


class _Stop(BaseException):
    def __init__(self, signum: int) -> None:
        self.signum = signum
