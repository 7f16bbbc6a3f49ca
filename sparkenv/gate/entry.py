"""The body of `sparkenv gate`, shared by the typer command and the fast path (fastpath.py), so both
spellings behave the same: validate, probe or replay, report, then exec the workload or exit."""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparkenv.core.errors import SparkenvError
from sparkenv.core.optionspec import env_flag
from sparkenv.render.options import ReportOptions

if TYPE_CHECKING:
    from collections.abc import Callable

    from sparkenv.gate.probes import Options

POLICIES = ("strict", "warn", "off")


@dataclass
class GateArgs:
    """What the gate was asked, from either parser: the workload, one field per option of gate/options.py
    GATE (its defaults are there, not here), and the reporting bundle (strict: --fail-on-warn)."""

    workload: list[str]
    policy: str | None
    need_gb: float
    sample: float
    deep: bool
    deep_cache: str | None
    bandwidth: bool
    import_unsloth: bool
    link_test: bool
    dump_facts: str | None
    facts: str | None
    python: str | None
    deadline: float
    watch: bool  # --watch: a watcher beside the workload (sparkenv/watch/)
    watch_dir: str | None
    watch_interval: float | None
    watch_policy: str | None
    attest: float  # --attest N: the probe's window over the workload's first N seconds (sparkenv/attest/)
    reporting: ReportOptions


def _seconds(name: str, value: float, *, zero_ok: bool) -> float:
    from sparkenv.core.bounds import seconds_problem

    problem = seconds_problem(value, zero_ok=zero_ok)
    if problem:
        raise SparkenvError(f"{name}: {problem}")
    return value


def validate(a: GateArgs) -> str:
    """The chosen policy; SparkenvError (exit 2, one line) for anything the gate cannot honour."""
    chosen = (a.policy or "warn").strip().lower()
    if chosen not in POLICIES:
        raise SparkenvError(f"--policy/$SPARKENV_GATE: {a.policy!r} is not one of {', '.join(POLICIES)}")
    _seconds("--deadline", a.deadline, zero_ok=False)
    _seconds("--sample", a.sample, zero_ok=True)
    _seconds("--attest", a.attest, zero_ok=True)
    if a.attest and not a.workload:
        raise SparkenvError(
            "--attest watches a workload: give it after --, e.g. sparkenv gate --attest 20 -- CMD"
        )
    if not math.isfinite(a.need_gb) or not 0 <= a.need_gb <= 1 << 40:  # memory in GB: bounded by any machine
        raise SparkenvError(f"--need-gb: must be a number of GB between 0 and {1 << 40}, not {a.need_gb:g}")
    workers_wanted()  # a bad $SPARKENV_GATE_WORKERS: exit 2 before any probe
    if a.python is not None:  # a name on PATH, a shim asked for its interpreter: as the audit resolves one
        from sparkenv.environment.interpreter import real
        from sparkenv.gate.workload_python import ask_within

        a.python = _asked(
            a, ("--python", a.python), lambda: real(a.python, "--python", ask_s=ask_within(a.deadline),
                                                    keep_unanswered=True)
        )  # fmt: skip
        if not os.path.isfile(a.python):
            raise SparkenvError(f"--python {a.python}: no such interpreter")
    if a.watch:
        _check_watch(a)
    return chosen


def judged_python(a: GateArgs) -> tuple[str, str]:
    """The interpreter the gate judges and why: --python, else the workload's own (its argv[0] or its
    script's shebang), else the one running sparkenv."""
    if a.python:
        return a.python, "--python"
    if a.workload and not a.facts:
        from sparkenv.gate.workload_python import ask_within, interpreter

        found = _asked(
            a, ("workload", *a.workload), lambda: interpreter(list(a.workload), ask_s=ask_within(a.deadline))
        )
        if found:
            return found
    return sys.executable, "sparkenv's own; the workload runs no Python seen here: --python names one"


# One question to a shim per process (start_early and run both validate and both need the interpreter),
# and the time it took comes out of the deadline: the gate answers within it whatever the shim does.
_ASKED: dict[tuple[str, ...], Any] = {}


def _asked(a: GateArgs, key: tuple[str, ...], ask: Callable[[], Any]) -> Any:
    if key not in _ASKED:
        started = time.monotonic()
        _ASKED[key] = ask()
        a.deadline = max(a.deadline / 3, round(a.deadline - (time.monotonic() - started), 1))
    return _ASKED[key]


def _check_watch(a: GateArgs) -> None:
    """--watch's options, and its folder made, before any probe: a typo costs no start."""
    from sparkenv.watch import api as launch

    if not a.workload:
        raise SparkenvError("--watch watches a workload: give it after --, e.g. sparkenv gate --watch -- CMD")
    if a.watch_interval is None:
        from sparkenv.knowledge import watch as limits

        a.watch_interval = limits().sampling.interval_s
    a.watch_policy, a.watch_interval = launch.check(a.watch_policy, a.watch_interval, "--watch-")
    a.watch_dir = launch.check_folder(a.watch_dir or launch.DEFAULT_FOLDER)


def start_early(a: GateArgs) -> None:
    """The fast path's early start (gate/early.py): NVML, the reading of the workload's interpreter and
    the --deep torch process, only for arguments the run will accept, so a bad argument never leaves a
    process behind."""
    from sparkenv.gate import early

    try:
        policy = validate(a)
        a.reporting.check()
    except SparkenvError:
        return  # the run says it, with exit 2; nothing was started
    if a.facts or policy == "off":
        return
    # --sample watches the GPU for a window: the probe itself does it, under the deadline
    early.start(gpu=not a.sample, torch=None)
    deep = a.deep or a.bandwidth or a.import_unsloth
    python = judged_python(a)[0]
    # forked before any thread starts (the torch process's readers)
    for part in early.INTERPRETER_PARTS:  # side by side: torch's files, the distributions
        early.start_group(
            early.interpreter_key(python, deep, part), lambda p=part: _interpreter_facts(python, deep, p)
        )
    if workers_wanted():  # forked before the processes probe starts: it leaves them out too
        early.start_checks(a.deadline, _check_group)
    gate = {os.getpid(), os.getppid(), *early.child_pids()}  # left out of the processes probe
    early.start_group(early.HOST, lambda: _host_facts(gate))
    if deep and not a.deep_cache:  # with a cache the process runs only when no record matches
        early.start(gpu=False, torch=early.torch_argv(python, a.bandwidth, a.import_unsloth))


def workers_wanted() -> bool:
    """Check workers (gate/early.py CHECK_GROUPS): $SPARKENV_GATE_WORKERS 1 always, 0 never (the gate
    judges every check itself), unset where the machine has early.MIN_CPUS cores or more (fewer: they
    would take turns with the probes and the gate on the same cores). SparkenvError for another value."""
    from sparkenv.core import children
    from sparkenv.gate.early import MIN_CPUS

    if os.environ.get("SPARKENV_GATE_WORKERS", "").strip():
        return env_flag("SPARKENV_GATE_WORKERS")
    return children.usable_cpus() >= MIN_CPUS


def _check_group(group: tuple[str, ...], receive: Any) -> Any:
    """A check worker's work (forked: gate/early.py): the checks' imports happen here, not in the gate."""
    from sparkenv.gate import run

    return run.check_group(group, receive)


def _interpreter_facts(python: str, read_kernels: bool, part: str) -> dict[str, Any]:
    from sparkenv.gate.probes import interpreter_facts  # in the forked child

    return interpreter_facts(python, read_kernels, part)


def _host_facts(gate: set[int]) -> dict[str, Any]:
    from sparkenv.gate.probes import host_facts  # in the forked child

    return host_facts(gate)


def _probe_options(a: GateArgs, python: str) -> Options:
    from sparkenv.gate.probes import Options

    return Options(
        python=python,
        workload=list(a.workload),
        sample_s=a.sample,
        bandwidth=a.bandwidth,
        import_unsloth=a.import_unsloth,
        deadline_s=a.deadline,
        deep=a.deep,
        link_test=a.link_test,
        deep_cache=a.deep_cache,
    )


def run(a: GateArgs) -> int:
    """Returns the exit code; execs the workload instead of returning when it should start."""
    from sparkenv.core.report import Status

    chosen = validate(a)
    a.reporting.check()  # a bad --select or --format: exit 2 before any probe
    if chosen == "off":
        if a.workload:
            start_workload(a)
        return 0
    from sparkenv.gate import orchestrate
    from sparkenv.gate.run import gate as run_gate

    python, judged = judged_python(a)
    restore = orchestrate.on_signals_kill_children()
    try:
        result, raw = run_gate(
            _probe_options(a, python), facts_file=a.facts, need_gb=a.need_gb, strict=chosen == "strict"
        )
    except orchestrate.Interrupted as exc:
        from sparkenv.core import signals

        signals.cleaned("the gate's probes were killed")
        line, code = signals.closing_line(exc.signum)
        print(line, file=sys.stderr)
        return code
    finally:
        restore()
    from sparkenv.render.emit import emit, shown, write_atomic  # imported while the probes ran

    if a.dump_facts:
        import json

        write_atomic(a.dump_facts, json.dumps(raw, indent=1, default=str) + "\n")
    result.context["interpreter"] = f"{python} ({judged})"
    # --select/--ignore and the waivers before the verdict: a start is blocked only by what is shown
    view = shown(result, a.reporting)
    code = emit(view, a.reporting, stream=sys.stderr if a.workload else sys.stdout)
    if not a.workload:
        return code
    fails = view.report.count(Status.FAIL)
    warned = view.report.count(Status.WARN) + view.report.count(Status.ERROR) if a.reporting.strict else 0
    if chosen == "strict" and (fails or warned):
        why = f"{fails} FAIL" + (f", {warned} WARN/ERROR (--fail-on-warn)" if warned else "")
        print(
            f"sparkenv gate: start blocked by {why} (policy strict); to start anyway set "
            "SPARKENV_GATE=warn or pass --policy warn",
            file=sys.stderr,
        )
        return 1
    start_workload(a)
    return 0  # not reached


def start_workload(a: GateArgs) -> None:
    """Exec the workload; with --watch the gate stays as its supervisor instead, with the watcher
    beside it (sparkenv/watch/supervise.py: an exec'd workload's end would end the watcher with it)."""
    from sparkenv.core import children

    # check workers never fed (the gate ended before judging): none survives; before the watcher
    # starts, which is a registered child too and must outlive the gate's work
    children.kill_all()
    watcher_env = dict(os.environ)  # the watcher's, without what --attest gives the workload
    if a.attest:
        _attest(a.attest)
    if a.watch:
        _supervise(a, watcher_env)
    exec_workload(a.workload)


def _supervise(a: GateArgs, watcher_env: dict[str, str]) -> None:
    from sparkenv.core import pool
    from sparkenv.watch import api as watch

    pool.reap_all()
    folder = a.watch_dir or watch.DEFAULT_FOLDER
    interval, policy = a.watch_interval or 2.0, a.watch_policy or "report"
    try:
        watch.supervise(
            a.workload, lambda pid: watch.start(folder, interval, policy, a.workload, pid, watcher_env)
        )
    except OSError as exc:
        _cannot_start(a.workload, exc)


def _attest(seconds: float) -> None:
    """--attest: the workload's environment gets the probe (sparkenv/attest/launch.py), and a sparkenv
    beside it reports on this stderr when its window ends."""
    from sparkenv.attest import api as attest

    folder = attest.run_folder(os.environ.get("SPARKENV_ATTEST_DIR") or attest.DEFAULT_FOLDER)
    env = attest.environment(os.environ, folder, seconds)
    attest.start_follower(folder, env, seconds)
    os.environ.clear()
    os.environ.update(env)


def exec_workload(cmd: list[str]) -> None:
    """Replace this process with the workload: its PID, signals and exit status are its own. Probe
    threads still stuck (a FIFO, a wedged driver call) vanish with the old image."""
    sys.stdout.flush()
    sys.stderr.flush()
    from sparkenv.core import children, pool

    pool.reap_all()
    children.before_exec()
    try:
        os.execvp(cmd[0], cmd)
    except OSError as exc:
        _cannot_start(cmd, exc)


def _cannot_start(cmd: list[str], exc: OSError) -> None:
    print(f"sparkenv: error: cannot start {cmd[0]}: {exc.strerror}", file=sys.stderr)
    finish(127 if isinstance(exc, FileNotFoundError) else 126)


def finish(code: int) -> None:
    """Exit now. With a probe thread still blocked, skip the interpreter's shutdown, which could wait."""
    sys.stdout.flush()
    sys.stderr.flush()
    if threading.active_count() > 1:
        os._exit(code)
    sys.exit(code)
