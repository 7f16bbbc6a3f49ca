"""Gather Stage.ATTEST's facts (records, the private JIT cache, the loaded libraries' GPU code), judge them
through the registry; run a workload under the probe (`sparkenv attest -- CMD`), or follow one the gate
exec'd (`gate --attest N`: the report comes from a sparkenv beside it, started as the watcher is)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Iterator, Mapping
from typing import Any

from sparkenv import rules
from sparkenv.attest import launch, record
from sparkenv.attest.gpu_use import Recorder
from sparkenv.core import children
from sparkenv.core.errors import SparkenvError
from sparkenv.core.report import Report
from sparkenv.facts.attest import AttestFacts
from sparkenv.patches.sdpa import mode_from_env

ATTENTION = ("sdpa", "flash-attn", "any")
POLL_S = 0.2
GONE_S = 1.0  # how often the follower looks whether the workload is gone, its report given
# No probe record by the window's end plus this: the workload loaded no torch (or not yet); the window
# ends with NVML's record of its processes alone.
NO_RECORD_GRACE_S = 5.0


def wanted_attention(option: str | None, env: Mapping[str, str]) -> tuple[str, str]:
    """The attention the workload asked for: --attention, else SDPA where $SPARKENV_SDPA wants the SDPA
    override (the one reading of that variable: patches/sdpa.py), else any."""

    if option is not None:
        choice = option.strip().lower()
        if choice not in ATTENTION:
            raise SparkenvError(f"--attention {option!r}: must be one of {', '.join(ATTENTION)}")
        return choice, f"asked for: --attention {choice}"
    raw = env.get("SPARKENV_SDPA")
    if raw and raw.strip() and mode_from_env(raw) is not None:
        return "sdpa", f"asked for: SPARKENV_SDPA={raw} (the SDPA override is wanted)"
    return "any", "nothing asked for (--attention sdpa|flash-attn, or SPARKENV_SDPA)"


def gather(
    where: str, attention: str | None, env: Mapping[str, str], jit_folder: str | None = None
) -> AttestFacts:
    records = [record.read(p) for p in record.paths(where)]
    gpu_use = tuple(record.read_gpu_use(p) for p in record.gpu_use_paths(where))
    wanted, why = wanted_attention(attention, env)
    jit = launch.jit_cache(jit_folder) if jit_folder else {}
    defined_in, symbol_reads = record.library_kernels(records)
    return AttestFacts(
        records=tuple(records),
        attention_wanted=wanted,
        wanted_why=why,
        library_code=record.library_code(records),
        jit_folder=jit_folder,
        jit_files=jit.get("files"),  # type: ignore[arg-type]
        jit_bytes=jit.get("bytes"),  # type: ignore[arg-type]
        defined_in=defined_in,
        symbol_reads=symbol_reads,
        gpu_use=gpu_use,
    )


def judge(facts: AttestFacts, target: str) -> Report:
    report = Report("attest", target, rules.evaluate(rules.Stage.ATTEST, facts))
    report.context = {
        "records": [r.path for r in facts.records],
        "attention_wanted": facts.attention_wanted,
        "windows_s": [r.window_s for r in facts.records],
        "finished": [r.finished for r in facts.records],
        "jit_cache": facts.jit_folder,
    }
    return report


def workload(
    cmd: list[str], folder: str, seconds: float, steps: int, attention: str | None
) -> tuple[AttestFacts, Report, Any]:
    """Start `cmd` under the probe, wait until its windows ended (or it exited), judge: (facts, report,
    the running workload). The caller reports, then waits for the workload, which goes on untouched."""
    run_dir = launch.run_folder(folder)
    env = launch.environment(os.environ, run_dir, seconds, steps)
    cache = env["CUDA_CACHE_PATH"]
    try:
        # its own session, registered (core/children.py): killed with its group if sparkenv is stopped
        child = children.spawn(cmd, env, stdout=sys.stdout.fileno(), stderr=sys.stderr.fileno())
    except OSError as exc:
        shutil.rmtree(cache, ignore_errors=True)
        raise SparkenvError(f"cannot start {cmd[0]}: {exc.strerror}") from None
    try:
        with _gpu_use(run_dir, child.pid) as sample:
            wait_for_windows(run_dir, lambda: child.poll() is not None, time.monotonic() + seconds, sample)
        facts = gather(run_dir, attention, env, cache)
    except BaseException:
        children.stop(child)
        shutil.rmtree(cache, ignore_errors=True)
        raise
    return facts, judge(facts, " ".join(cmd)[:200]), (child, cache)


def wait_for_windows(run_dir: str, gone: Any, deadline: float, tick: Any = None) -> None:
    """Until the workload is gone, or every record in `run_dir` has its end line (and one has come; past
    `deadline` unless one ended already: --steps ends a window early), or none has come by `deadline` and
    NO_RECORD_GRACE_S. `tick` is called at each look (NVML's sample of the workload's processes)."""
    while not gone():
        if tick is not None:
            tick()
        found = record.paths(run_dir)
        ended = [_has_end(p) for p in found]
        now = time.monotonic()
        if found and all(ended) and (now >= deadline or any(ended)):
            return
        if not found and now >= deadline + NO_RECORD_GRACE_S:
            return
        time.sleep(POLL_S)


@contextlib.contextmanager
def _gpu_use(run_dir: str, root: int) -> Iterator[Any]:
    """NVML's record of the workload's process tree for as long as the window is waited for."""

    recorder = Recorder(run_dir, root)
    try:
        yield recorder.tick
    finally:
        recorder.close()


def _has_end(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - 4096))
            return b'"kind":"end"' in fh.read()
    except OSError:
        return False


def finish(running: Any) -> int:
    """Wait for the workload (untouched by then), remove its private JIT cache; its exit status."""
    child, cache = running
    try:
        return child.wait()
    except BaseException:
        children.stop(child)
        raise
    finally:
        children.forget(child)
        shutil.rmtree(cache, ignore_errors=True)


def follow(pid: int, run_dir: str, jit: str | None, attention: str | None, seconds: float) -> Report:
    """gate --attest's sparkenv beside the workload (which has the gate's PID): the report once its
    windows ended, or once it is gone."""
    with _gpu_use(run_dir, pid) as sample:
        wait_for_windows(run_dir, lambda: gone(pid), time.monotonic() + seconds, sample)
    return judge(gather(run_dir, attention, os.environ, jit), run_dir)


def gone(pid: int) -> bool:
    """The workload has ended: no such process, or one that exited and waits to be reaped (a zombie: its
    parent may be waiting for this follower to close the stderr it shares)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] in (b"Z", b"X")


def after_follow(pid: int, jit: str | None) -> None:
    """The follower, its report given: once the workload is gone, its private JIT cache goes too."""
    while not gone(pid):
        time.sleep(GONE_S)
    if jit:
        shutil.rmtree(jit, ignore_errors=True)


def start_follower(run_dir: str, env: Mapping[str, str], seconds: float) -> None:
    """From the gate, before it execs the workload: the follower, in its own session (it outlives the
    exec, as the watcher does); its report goes to this stderr."""
    argv = [sys.executable, "-m", "sparkenv", "attest", "--record", run_dir, "--follow", str(os.getpid())]
    argv += ["--jit-cache", env["CUDA_CACHE_PATH"], "--seconds", repr(seconds)]
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    own = launch.without_probe(env)
    own["PYTHONPATH"] = os.pathsep.join(p for p in (here, own.get("PYTHONPATH")) if p)
    sys.stderr.flush()
    children.spawn(argv, own, stdout=sys.stderr.fileno(), stderr=sys.stderr.fileno())
