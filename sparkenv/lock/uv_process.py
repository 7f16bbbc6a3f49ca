"""One `uv pip compile` process under way: started, its log read, its answer awaited, killed on every way
out. A module of its own, importing nothing but the process registry, so that a re-lock whose uv command
is cached (lock/spawn_cache.py) starts uv before the lock's own modules (inputs, profiles, packaging's
parsers: a tenth of a second) are imported; lock/uvdriver.py builds the command and starts it here.

uv runs in its own process group (its own session, core/children.py), so a timeout, Ctrl-C, SIGTERM or
SIGHUP stops uv and everything it started, not only its first process."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparkenv.core import children
from sparkenv.lock import timeline

# uv's log filter that prints only its resolver's decisions (a few hundred lines for a large project),
# which lock/early.py reads as uv writes them
RUST_LOG = "uv_resolver::resolver=debug"


def environment(extra_env: dict[str, str] | None, log: bool) -> dict[str, str]:
    """uv's environment: this process's, without progress bars or colours, plus `extra_env` (a netrc).
    uv's requests get the lock's per-request deadline (index/deadline.py): UV_HTTP_TIMEOUT bounds a whole
    request of uv's, in whole seconds."""
    import math

    from sparkenv.index import deadline

    http_timeout = str(max(1, math.ceil(deadline.request_s)))
    env = {**os.environ, "UV_NO_PROGRESS": "1", "NO_COLOR": "1", "UV_HTTP_TIMEOUT": http_timeout}
    env.update(extra_env or {})
    if log:
        env["RUST_LOG"] = RUST_LOG
    return env


class Running:
    """One `uv pip compile` started: `result()` waits for the pylock text it wrote, `stop()` kills it. The
    caller may work while uv resolves (`sparkenv lock` judges the declared requirements then); every way
    out — result(), stop(), an error, a signal — kills uv's whole group and reaps it. `stage`: what the
    errors name (lock/uvdriver.py Stage, or anything with a `name`)."""

    def __init__(
        self,
        stage: Any,
        cmd: list[str],
        out: Path,
        timeout: float,
        env: dict[str, str],
        log: bool,
        errors: Callable[[Any, str], Exception] | None = None,
    ):
        import subprocess

        from sparkenv.index import deadline

        self.stage, self.out = stage, out
        self.errors = errors  # uv's failure read from its stderr (lock/uvdriver.py error)
        left = deadline.remaining()  # the lock's total deadline, when one was set
        self.timeout = timeout if left is None else max(0.0, min(timeout, left))
        self.deadline = time.monotonic() + self.timeout
        self._kept: list[str] = []
        self._reader: threading.Thread | None = None
        self._killed: bool | None = None  # set by the first stop()
        self._pending: list[str] | None = []  # log lines read before read_log() named their reader
        self._on_log: Callable[[str], None] | None = None
        self._log_lock = threading.Lock()
        try:
            quiet_out = subprocess.DEVNULL if log else None  # uv writes the lock to a file
            # in the work folder, which holds only the files sparkenv wrote: uv reads a pyproject.toml (its
            # [tool.uv]) from its working folder and the folders above, and a FIFO or /dev/zero there hung
            # it or filled memory; the inputs' paths are absolute already (inputs._local). It dies with
            # sparkenv, SIGKILL included; its temporary files go into that folder too (TMPDIR), which a
            # later lock removes when a SIGKILL left it behind (lock/spawn_cache.py sweep)
            tmp = out.parent / "tmp"
            tmp.mkdir(mode=0o700, exist_ok=True)
            env = {**env, "TMPDIR": str(tmp)}
            self.proc = children.spawn(
                cmd, env, text=True, stdout=quiet_out, cwd=out.parent, die_with_parent=True
            )
        except OSError as exc:
            from sparkenv.core.errors import ServiceMissing

            raise ServiceMissing(f"cannot run uv: {exc}") from None
        try:
            timeline.mark("uv spawned")
            if log:
                # drained from the start: uv never waits on a full pipe, however long the lock takes to
                # name the log's reader (a cached command starts uv before the lock knows its inputs)
                self._reader = threading.Thread(target=self._drain, name="sparkenv-uv-log", daemon=True)
                self._reader.start()
        except BaseException as exc:  # a signal before the caller holds this object: uv is not left running
            if isinstance(exc, KeyboardInterrupt):
                stopped([self])
            self.stop()
            raise

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if not line.startswith("DEBUG "):
                self._kept.append(line)
                continue
            with self._log_lock:
                if self._pending is not None:
                    self._pending.append(line)
                    continue
                on_log = self._on_log
            if on_log is not None:
                with contextlib.suppress(Exception):  # a hint's reader failing never stops the lock
                    on_log(line.rstrip("\n"))

    def read_log(self, on_log: Callable[[str], None]) -> None:
        """Hand each line of uv's resolver log to `on_log` (started with log=True), those uv wrote so far
        first, in order; the other lines are kept for the error. Called once."""
        with self._log_lock:  # the drain waits meanwhile: no line overtakes those kept so far
            pending, self._pending = self._pending or [], None
            self._on_log = on_log
            for line in pending:
                with contextlib.suppress(Exception):
                    on_log(line.rstrip("\n"))

    def result(self) -> str:
        """The pylock text uv wrote; BuildFailed, SparkenvError or ServiceMissing (a timeout) otherwise."""
        import subprocess

        from sparkenv.index import deadline

        proc = self.proc
        try:
            if self._reader is None:
                stderr = proc.communicate(timeout=max(0.0, self.deadline - time.monotonic()))[1]
            else:
                self._wait(deadline)
                timeline.mark("uv exited")
                self._reader.join(timeout=5.0)  # uv has exited: its pipe ends now (a grandchild: not waited)
                stderr = "".join(self._kept)
        except subprocess.TimeoutExpired:
            from sparkenv.core.errors import ServiceMissing

            # uv still resolving at the lock's deadline: it waits on the index (or a build ran that long)
            total = deadline.total_s if deadline.total_s is not None else self.timeout
            raise ServiceMissing(deadline.message(total, "--timeout")) from None
        finally:  # a timeout, Ctrl-C or a signal: uv's whole group goes, never left running
            self.stop()
        if proc.returncode != 0:
            raise (self.errors or _failed)(self.stage, stderr)
        return self.out.read_text(encoding="utf-8")

    def _wait(self, deadline: Any) -> None:
        """Wait for uv until the deadline; with a progress line every PROGRESS_S while it resolves."""
        import subprocess

        started = self.deadline - self.timeout
        every = deadline.PROGRESS_S
        while True:
            now = time.monotonic()
            left = self.deadline - now
            say = deadline.say
            since_line = (now - started) % every  # the lines come every PROGRESS_S from uv's start
            try:
                children.wait(self.proc, max(0.0, left if say is None else min(left, every - since_line)))
                return
            except subprocess.TimeoutExpired:
                if say is None or time.monotonic() >= self.deadline:
                    raise
            say(  # uv has not answered yet: what it waits on is the index or a build it runs
                f"uv is still resolving after {time.monotonic() - started:.0f} s, waiting on the package "
                f"index or a build (the lock stops at {deadline.total_s or self.timeout:g} s, --timeout) …"
            )

    def stop(self) -> bool:
        """Kill uv's group and reap it (once); whether uv was still running then, or killed by a signal."""
        if self._killed is None:
            self._killed = self.proc.returncode is None or self.proc.returncode < 0
            children.stop(self.proc)
        return self._killed


def _failed(stage: Any, stderr: str) -> Exception:
    from sparkenv.core.errors import SparkenvError
    from sparkenv.core.redact import excerpt

    # uv quotes what it read (an input's lines): bounded and redacted, as every quoted input
    return SparkenvError(
        f"uv pip compile failed ({stage.name} stage): {excerpt(stderr, 400) or 'no message'}"
    )


def stopped(runs: list[Running]) -> None:
    """Kill every started uv (Ctrl-C, a signal) and say so in the closing line."""
    killed = [r.proc for r in runs if r.stop()]
    if killed:
        from sparkenv.core import signals

        groups = ", ".join(str(p.pid) for p in killed)
        signals.cleaned(f"killed uv (process group {groups})")
