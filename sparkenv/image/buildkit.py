"""A build whose fetch stage needs an index's credential goes through BuildKit, by the docker command line:
the credential reaches the stage only as a secret mount (`RUN --mount=type=secret`), which BuildKit keeps
out of every layer, the image's history and its build cache.

The docker SDK builds with the Engine API's classic builder, which has no secrets (a file carried into a
stage stays in the engine's cache) and does not speak the session BuildKit's secrets travel over. A
loopback proxy adding the credential was the other way, and was not taken: it needs the host's network,
must rewrite the index's pages, and its address would change the fetch step's cache key on every build.
A build without a credential keeps the SDK's classic build, which needs no CLI.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from sparkenv.core import children
from sparkenv.core.errors import ServiceMissing
from sparkenv.environment.interpreter import which_all
from sparkenv.image import engine  # its Progress and failure wording: one build log, two builders

SECRET_ID = "sparkenv-netrc"
SECRET_TARGET = f"/run/secrets/{SECRET_ID}"
PROBE_TIMEOUT = 20  # seconds for `docker buildx version`
# "#7 [stage-1 3/12] RUN …" (a step), "#7 [internal] load …" (BuildKit's own work), "#7 0.512 text" (output)
_VERTEX = re.compile(r"^#(\d+) \[([^\]]+)\] (.*)$")
_OUTPUT = re.compile(r"^#(\d+) \d+\.\d+ ?(.*)$")
_STATE = re.compile(r"^#(\d+) (CACHED|DONE\b.*|ERROR:? ?(.*))$")
_STEP = re.compile(r"^(?:(\S+) )?(\d+)/(\d+)$")
_NO_BUILDKIT = re.compile(r"buildx component is missing|BuildKit is enabled but", re.I)
_INSTALL = (
    "install docker's buildx plugin (docker-buildx-plugin from Docker's apt repository, docker-buildx on "
    "Debian/Ubuntu)"
)


def mount() -> str:
    """The RUN flag and variable that give a fetch step the index's credential: a netrc pip reads, mounted
    for that step alone, readable by the stage's user whoever the base makes it."""
    flag = f"--mount=type=secret,id={SECRET_ID},target={SECRET_TARGET},required=true,mode=0444"
    return f"{flag} NETRC={SECRET_TARGET}"


def command() -> tuple[list[str], dict[str, str]]:
    """The docker CLI's BuildKit build: `docker buildx build --load` where buildx answers, else the
    built-in client of a CLI before buildx (DOCKER_BUILDKIT=1 docker build). The first `docker` on PATH
    that has either (a static CLI without its buildx plugin may shadow the distribution's)."""

    found = which_all("docker")
    if not found:
        raise ServiceMissing(
            "the lock's index needs a credential, which reaches the build only as a BuildKit secret, "
            f"and there is no docker command line on PATH: install docker's CLI and {_INSTALL}"
        )
    for docker in found:
        if _answers([docker, "buildx", "version"], {}):
            return [docker, "buildx", "build", "--load"], {}
        if _answers([docker, "build", "--help"], {"DOCKER_BUILDKIT": "1"}):
            return [docker, "build"], {"DOCKER_BUILDKIT": "1"}
    raise ServiceMissing(
        "the lock's index needs a credential, which reaches the build only as a BuildKit secret, and "
        f"no docker command line on PATH has BuildKit ({', '.join(found)}): {_INSTALL}"
    )


def _answers(argv: list[str], extra: dict[str, str]) -> bool:

    try:
        probe = children.spawn(argv, {**os.environ, **extra})
    except OSError:
        return False
    try:
        probe.communicate(timeout=PROBE_TIMEOUT)
        return probe.returncode == 0
    except subprocess.TimeoutExpired:
        return False
    finally:
        children.stop(probe)


@dataclass
class PlainLog:
    """BuildKit's `--progress=plain` log, told to the build's Progress as the classic build's is: a line
    per step, cached steps marked, a failed step with its own output."""

    progress: engine.Progress
    steps: dict[str, tuple[int, str]] = field(default_factory=dict)  # vertex -> (number, step)
    stage_sizes: dict[str, int] = field(default_factory=dict)
    output: dict[str, list[str]] = field(default_factory=dict)
    failed: str = ""  # the vertex that failed
    error: str = ""
    last_error: str = ""

    def line(self, raw: str) -> None:
        text = raw.rstrip("\r\n")
        m = _VERTEX.match(text)
        if m:
            vertex, name, what = m.groups()
            step = _STEP.match(name)
            if step and vertex not in self.steps:
                self.stage_sizes[step.group(1) or ""] = int(step.group(3))
                self.steps[vertex] = (len(self.steps) + 1, what)
                self.progress.begin(len(self.steps), sum(self.stage_sizes.values()), what)
            elif not step and vertex not in self.steps:
                self.steps[vertex] = (0, f"[{name}] {what}")
            return
        m = _STATE.match(text)
        if m:
            vertex, state, why = m.groups()
            if state == "CACHED" and self.steps.get(vertex, (0, ""))[0]:
                self.progress.was_cached()
            elif state.startswith("ERROR") and not self.failed:
                self.failed, self.error = vertex, (why or "").strip()
            return
        m = _OUTPUT.match(text)
        if m:
            vertex, said = m.groups()
            self.output.setdefault(vertex, []).append(said)
            self.progress.output(said)
            return
        if re.match(r"^(error|ERROR):? ", text):
            self.last_error = text.split(" ", 1)[1].strip()

    def failure(self, exit_code: int) -> engine.BuildFailed | ServiceMissing:
        """The failed step as the classic build says it (engine._failure): the step, its output, the
        base check's findings when it printed facts."""
        message = self.last_error or self.error or f"docker build exited {exit_code}"
        if _NO_BUILDKIT.search(message):
            return ServiceMissing(
                "the lock's index needs a credential, which reaches the build only as a BuildKit secret, and "
                f"this docker command line has no BuildKit: {_INSTALL}"
            )
        number, step = self.steps.get(self.failed, (0, ""))
        self.progress.number, self.progress.step = number, step.removeprefix("[internal] ")
        self.progress.tail.clear()
        self.progress.tail.extend(self.output.get(self.failed, []))
        text, found = engine._failure({"error": self.error or message}, self.progress)
        if text.startswith("the base image is not here"):
            return ServiceMissing(text)
        return engine.BuildFailed(text, found)


def build(
    context: io.BytesIO,
    secrets: dict[str, bytes],
    platform: str | None,
    no_cache: bool,
    network: str | None,
    progress: engine.Progress,
    silent_s: float = engine.BUILD_TIMEOUT,
) -> str:
    """Build the tar `context` (sent on stdin) with BuildKit, each of `secrets` (id -> bytes) given as a
    secret from a file only this user can read, removed afterwards; return the image ID. A build silent
    for `silent_s` seconds is stopped."""

    argv, extra = command()
    with tempfile.TemporaryDirectory(prefix="sparkenv-build-") as tmp:
        iid = Path(tmp) / "image-id"
        args = [*argv, "--progress=plain", "--iidfile", str(iid)]
        for name, data in secrets.items():
            path = Path(tmp) / name
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            args += ["--secret", f"id={name},src={path}"]
        if platform:
            args += ["--platform", platform]
        if no_cache:
            args.append("--no-cache")
        if network:
            args += ["--network", network]
        args.append("-")
        log = PlainLog(progress)
        proc = children.spawn(args, {**os.environ, **extra}, stdin=subprocess.PIPE, stderr=subprocess.STDOUT)
        heard = [time.monotonic()]
        done = threading.Event()

        def send() -> None:  # the context on stdin while the log is read: neither pipe may fill up
            with contextlib.suppress(OSError, ValueError):
                assert proc.stdin is not None
                shutil.copyfileobj(context, proc.stdin)
                proc.stdin.close()

        def watch() -> None:
            while not done.wait(5):
                if time.monotonic() - heard[0] > silent_s:
                    log.last_error = f"the build printed nothing for {silent_s:g} s: stopped"
                    children.kill(proc)
                    return

        threading.Thread(target=send, daemon=True).start()
        threading.Thread(target=watch, daemon=True).start()
        try:
            assert proc.stdout is not None
            for chunk in proc.stdout:
                heard[0] = time.monotonic()
                log.line(chunk.decode("utf-8", "replace"))
            children.wait(proc, 60)
        finally:
            done.set()
            progress.done()
            children.stop(proc)
        if proc.returncode != 0:
            raise log.failure(proc.returncode)
        try:
            image_id = iid.read_text().strip()
        except OSError:
            image_id = ""
    if not image_id:
        raise engine.BuildFailed("the build ended without an image ID")
    return image_id
