"""The Docker side of `sparkenv build`: connect, stream the build with progress, check the architecture,
run the image's own audit in a throw-away container, tag. Every call has a timeout."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn, TextIO

from sparkenv.core import signals
from sparkenv.core.errors import ServiceMissing, SparkenvError
from sparkenv.core.extras import missing
from sparkenv.core.report import Finding
from sparkenv.facts.image import is_facts
from sparkenv.image.base_report import findings

API_TIMEOUT = 60  # seconds for ordinary Engine API calls
BUILD_TIMEOUT = 3600  # seconds the build stream may stay silent (a long pip download)
VERIFY_TIMEOUT = 300  # seconds for the audit container
_STEP_RE = re.compile(r"^Step (\d+)/(\d+) : (.*)")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_PULL_FAIL = re.compile(
    r"pull access denied|manifest unknown|not found|no such host|dial tcp|TLS handshake|i/o timeout"
    r"|connection refused|unauthorized",
    re.I,
)


class BuildFailed(SparkenvError):
    """A Dockerfile step failed or the image is not what was asked for: exit 1. `findings`: what the
    registry judged from the step's facts (the base check), for the build's report."""

    exit_code = 1

    def __init__(self, message: str, findings: tuple[Finding, ...] = ()) -> None:
        super().__init__(message)
        self.findings = findings


def _docker_host() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def connect(timeout: int = API_TIMEOUT) -> Any:
    """A docker.DockerClient that answered a ping, or ServiceMissing (exit 3) saying how to fix it."""
    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        raise missing("build") from None
    import requests

    host = _docker_host()
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
        return client
    except (DockerException, requests.RequestException, OSError) as exc:
        text = str(exc)
        if "Permission denied" in text or "PermissionError" in text:
            raise ServiceMissing(
                f"no permission on the Docker socket ({host}): add your user to the docker group "
                "(sudo usermod -aG docker $USER, then log in again) or run as root"
            ) from None
        raise ServiceMissing(
            f"no Docker engine answers at {host}: start it (sudo systemctl start docker, or `dockerd &` as "
            "root; apt-get install docker.io if it is missing) or point DOCKER_HOST at one"
        ) from None


def lost(exc: BaseException) -> ServiceMissing:
    return ServiceMissing(
        f"the Docker engine went away ({exc.__class__.__name__}): is dockerd still running?"
    )


def first_line(text: object, limit: int = 300) -> str:
    return (str(text).strip().splitlines() or ["no reason given"])[0][:limit]


@contextmanager
def talking(what: str, refused: Callable[[str], NoReturn] | None = None) -> Iterator[None]:
    """The one translation of the Docker engine's errors, around every call sparkenv makes to it: the
    engine's refusal (an API error) is ServiceMissing (exit 3) with the engine's own first line, or
    `refused(line)` where the caller has a closer word (the build's step, the registry's answer); a cut
    connection is `lost` (exit 3). `what` names the call in messages ("the push of REF")."""
    import requests
    import urllib3
    from docker.errors import APIError, DockerException

    try:
        yield
    except APIError as exc:
        line = first_line(exc.explanation or exc)
        if refused is not None:
            refused(line)
        raise ServiceMissing(f"the Docker engine refused {what}: {line}") from None
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
        # a cut stream surfaces as urllib3's ProtocolError, which requests does not wrap
        raise lost(exc) from None
    except DockerException as exc:
        raise ServiceMissing(f"the Docker engine failed {what}: {first_line(exc)}") from None


def local_image(client: Any, ref: str) -> Any | None:
    from docker.errors import ImageNotFound

    with talking(f"the look-up of {ref}"):
        try:
            return client.images.get(ref)
        except ImageNotFound:
            return None


@dataclass
class Progress:
    """Step n/N lines, cached steps marked, pulls counted; a live last-output line on a terminal."""

    quiet: bool
    out: TextIO = sys.stderr
    step: str = ""
    number: int = 0
    total: int = 0
    cached: int = 0
    pulled: int = 0
    _live: bool = False

    def __post_init__(self) -> None:
        self.tail: deque[str] = deque(maxlen=25)
        self.tty = self.out.isatty() and not self.quiet

    def _clear(self) -> None:
        if self._live:
            self.out.write("\r\033[K")
            self._live = False

    def line(self, text: str) -> None:
        """A line of the classic builder's stream."""
        text = text.rstrip("\n")
        for part in text.splitlines() or [""]:
            m = _STEP_RE.match(part)
            if m:
                self.begin(int(m.group(1)), int(m.group(2)), m.group(3))
            elif part.strip() == "---> Using cache":
                self.was_cached()
            elif not part.strip().startswith("--->"):
                self.output(part)
        self.out.flush()

    def begin(self, number: int, total: int, step: str) -> None:
        """Step `number` of `total` starts (the classic builder's and BuildKit's logs both tell it)."""
        self.number, self.total, self.step = number, total, step
        if not self.quiet:
            self._clear()
            self.out.write(f"step {self.number}/{self.total}: {self.step[:150]}\n")
            self.out.flush()

    def was_cached(self) -> None:
        self.cached += 1
        if not self.quiet:
            self._clear()
            self.out.write("    cached\n")
            self.out.flush()

    def output(self, part: str) -> None:
        """A line a step printed: kept for a failure's message, shown live on a terminal; its colour codes
        (pip colours its errors) removed, so a quoted log reads as text."""
        part = _ANSI.sub("", part)
        if not part.strip():
            return
        self.tail.append(part)
        if self.tty:
            self.out.write("\r\033[K    " + part.strip()[:100])
            self.out.flush()
            self._live = True

    def pull(self, chunk: dict[str, Any]) -> None:
        status = str(chunk.get("status", ""))
        if status.startswith("Pull complete"):
            self.pulled += 1
        if not self.quiet and ("Pulling from" in status or status.startswith(("Digest:", "Status:"))):
            self._clear()
            self.out.write(f"    {chunk.get('id', '')} {status}\n".replace("     ", "    "))
            self.out.flush()

    def done(self) -> None:
        self._clear()


def build(
    client: Any,
    context: Any,
    platform: str | None,
    no_cache: bool,
    network: str | None,
    progress: Progress,
) -> str:
    """Stream a classic build of the tar `context`; return the image ID. Raise BuildFailed with the step
    and the last log lines; the engine's errors through `talking` (exit 3). A build that needs a secret
    goes through BuildKit instead (image/buildkit.py says why)."""
    kwargs: dict[str, Any] = {
        "fileobj": context,
        "custom_context": True,
        "dockerfile": "Dockerfile",
        "rm": True,
        "forcerm": True,
        "nocache": no_cache,
        "decode": True,
        "timeout": BUILD_TIMEOUT,
    }
    if platform:
        kwargs["platform"] = platform
    if network:
        kwargs["network_mode"] = network
    image_id = ""
    stream = None
    try:
        with talking("the build"):
            stream = client.api.build(**kwargs)
            for chunk in stream:
                if "stream" in chunk:
                    progress.line(chunk["stream"])
                    m = re.match(r"Successfully built ([0-9a-f]+)", chunk["stream"].strip())
                    if m and not image_id:
                        image_id = m.group(1)
                elif "aux" in chunk and isinstance(chunk["aux"], dict) and chunk["aux"].get("ID"):
                    image_id = chunk["aux"]["ID"]
                elif "status" in chunk:
                    progress.pull(chunk)
                elif "error" in chunk:
                    progress.done()
                    text, found = _failure(chunk, progress)
                    if text.startswith("the base image is not here"):
                        raise ServiceMissing(text)
                    raise BuildFailed(text, found)
    finally:
        progress.done()
        close = getattr(stream, "close", None)
        if close:
            close()
    if not image_id:
        raise BuildFailed("the build ended without an image ID")
    return image_id


def _failure(chunk: dict[str, Any], progress: Progress) -> tuple[str, tuple[Finding, ...]]:
    """What a failed step says: the error's text and, when the step printed the base check's facts, the
    registry's findings about them (the text is then one line: the findings are the report)."""
    message = str(chunk.get("error") or chunk.get("errorDetail", {}).get("message", "")).strip()
    where = (
        f"step {progress.number}/{progress.total}: {progress.step}"
        if progress.number
        else "before the first step"
    )
    from_step = progress.number <= 1 or re.match(r"^FROM ", progress.step, re.I)
    if from_step and _PULL_FAIL.search(message):
        text = (
            f"the base image is not here and could not be pulled ({message}): run `docker pull "
            f"{progress.step.split()[1] if progress.step.upper().startswith('FROM ') else 'IMAGE'}` "
            "where a registry is reachable, or pass --base IMAGE"
        )
        return text, ()

    # the base check prints facts only; what they mean comes from the registry (rules/g9.py, Stage.IMAGE)
    judged = tuple(findings(progress.tail))
    if judged:
        return f"build failed at {where}: {message}", judged
    tail = "\n".join(f"    | {t}" for t in progress.tail if not is_facts(t))
    if tail:
        return f"build failed at {where}\n{tail}\n    {message}", ()
    return f"build failed at {where}: {message}", ()


def architecture(client: Any, image_id: str) -> str:
    return str(client.images.get(image_id).attrs.get("Architecture", ""))


@dataclass
class Verification:
    exit_code: int
    report: dict[str, Any] | None
    raw: str
    stderr: str

    def problems(self) -> list[str]:
        if not self.report:
            return []
        return [
            f"{f['id']} {f['status']}: {f['summary']}"
            for f in self.report.get("findings", [])
            if f.get("status") in ("FAIL", "ERROR")
        ]

    @property
    def fails(self) -> int:
        if not self.report:
            return 0
        return sum(1 for f in self.report.get("findings", []) if f.get("status") == "FAIL")


ONE_SHOT_OUTPUT_CAP = 8 << 20  # bytes kept of a one-shot container's stdout (and again of its stderr)


@dataclass
class OneShot:
    exit_code: int
    stdout: str
    stderr: str
    truncated: bool  # an output was over ONE_SHOT_OUTPUT_CAP: the rest was not read


class OneShotTimeout(SparkenvError):
    """The container ran past its time: it was removed (exit 2: the image, not the engine, is at fault)."""


class OneShotNoProgram(SparkenvError):
    """The image lacks the program the container was to run (python3 in a non-Python image): exit 2."""


def run_once(
    client: Any,
    image: str,
    argv: list[str],
    *,
    timeout: float,
    label: str,
    what: str,
    name: str,
    through_entrypoint: bool = False,
) -> OneShot:
    """The one way sparkenv runs a container: `argv` (as the entrypoint: the image's own is bypassed)
    in `image`, network off, labelled `label`, waited on for at most `timeout` seconds, its outputs read
    up to a cap, and always removed — on an error, a timeout, Ctrl-C, SIGTERM or SIGHUP too (the
    closing line then says so). The engine's errors become ServiceMissing (exit 3) with its message;
    `what` names the run in messages ("the image's audit"), `name` the container ("verification").
    `through_entrypoint`: `argv` is the command given to the image's own ENTRYPOINT, as `docker run`."""

    import requests

    container = None
    interrupted = False
    started = time.monotonic()

    def no_program(line: str) -> NoReturn:
        if re.search(r"executable file not found|no such file or directory", line, re.I):
            raise OneShotNoProgram(f"{what}: the image has no {argv[0]} to run ({line})")
        raise ServiceMissing(f"the Docker engine refused {what}: {line}")

    try:
        # SIGTERM unwinds like Ctrl-C, so the container goes either way
        with signals.raising(), talking(what, refused=no_program):
            how = {"command": argv} if through_entrypoint else {"entrypoint": argv[:1], "command": argv[1:]}
            container = client.containers.create(image, **how, network_disabled=True, labels={label: "1"})
            container.start()
            try:
                result = container.wait(timeout=timeout)
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError) as exc:
                # docker-py's wait timeout surfaces as either, depending on where urllib3 noticed it
                if time.monotonic() - started >= timeout - 0.5:
                    raise OneShotTimeout(f"{what} ran over {timeout:g} s: stopped and removed") from None
                raise lost(exc) from None
            out, cut_out = _capped_logs(container, stdout=True)
            err, cut_err = _capped_logs(container, stdout=False)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: the container goes all the same
        interrupted = True
        raise
    finally:
        if container is not None:
            _remove(container, interrupted, name)
    return OneShot(int(result.get("StatusCode", -1)), out, err, cut_out or cut_err)


def _capped_logs(container: Any, stdout: bool) -> tuple[str, bool]:
    """One stream of the container's output, at most ONE_SHOT_OUTPUT_CAP bytes of it (a hostile image
    printing 300 MB must not cost sparkenv 900 MB of memory)."""
    got: list[bytes] = []
    size = 0
    stream = container.logs(stdout=stdout, stderr=not stdout, stream=True)
    try:
        for chunk in stream:
            got.append(chunk[: ONE_SHOT_OUTPUT_CAP - size])
            size += len(chunk)
            if size >= ONE_SHOT_OUTPUT_CAP:
                return b"".join(got).decode("utf-8", "replace"), True
    finally:
        close = getattr(stream, "close", None)
        if close:
            close()
    return b"".join(got).decode("utf-8", "replace"), False


def _remove(container: Any, interrupted: bool, name: str) -> None:
    import requests
    from docker.errors import DockerException

    try:
        container.remove(force=True)
    except (DockerException, requests.RequestException, OSError):
        return  # the engine went away: the error being raised says so
    if interrupted:
        signals.cleaned(f"removed the {name} container {container.short_id}")


def verify(client: Any, image_id: str, timeout: int = VERIFY_TIMEOUT, gpu: str = "12.1") -> Verification:
    """`sparkenv audit --json --lock … --gpu GPU` inside the image, in a container that is always
    removed. `gpu`: the GPU the image's extensions must run on (G7), `none` to skip."""
    argv = ["/usr/local/bin/sparkenv", "audit", "--json", "--lock", "/opt/sparkenv/pylock.toml", "--gpu", gpu]
    try:
        ran = run_once(
            client,
            image_id,
            argv,
            timeout=timeout,
            label="io.sparkenv.verify",
            what="the image's audit",
            name="verification",
        )
    except OneShotTimeout:
        raise BuildFailed(f"the image's audit ran over {timeout} s; the image was not tagged") from None
    except OneShotNoProgram as exc:
        raise BuildFailed(f"could not run the image's audit: {exc}") from None
    try:
        report = json.loads(ran.stdout)
    except ValueError:
        report = None
    return Verification(ran.exit_code, report, ran.stdout, ran.stderr)


STARTED = "sparkenv: the image started through its entrypoint"


def start_once(client: Any, image_id: str, timeout: int = VERIFY_TIMEOUT) -> str | None:
    """Start the image once as `docker run IMAGE CMD` does, through its own ENTRYPOINT (the gate, then
    the base's entrypoint), with a trivial command; None when it started and the command ran, else the
    reason (the exit status and the last line it printed)."""
    try:
        ran = run_once(
            client,
            image_id,
            ["python3", "-c", f"print({STARTED!r})"],
            timeout=timeout,
            label="io.sparkenv.verify",
            what="the image's first start",
            name="verification",
            through_entrypoint=True,
        )
    except (OneShotTimeout, OneShotNoProgram) as exc:
        return str(exc)
    if ran.exit_code == 0 and STARTED in ran.stdout:
        return None
    last = ((ran.stderr.strip() or ran.stdout.strip()).splitlines() or ["no output"])[-1]
    return f"exit {ran.exit_code}: {last}"


def tag(client: Any, image_id: str, ref: str) -> None:
    """Tag the image `ref`; the engine's refusal is ServiceMissing (exit 3) with its message."""
    repo, _, version = ref.rpartition(":")
    if not repo or "/" in version:
        repo, version = ref, "latest"
    with talking(f"the tag {ref} for {image_id}"):
        done = client.api.tag(image_id, repo, version, force=True)
    if not done:
        raise BuildFailed(f"the engine did not tag {image_id} as {ref}")


def retag(client: Any, image_id: str, ref: str) -> None:
    """Point `ref` back at `image_id`; best effort on the way out of a failure, as `untag`."""

    try:
        tag(client, image_id, ref)
    except SparkenvError:
        return
    signals.cleaned(f"{ref} names {image_id[:19]} again")


def untag(client: Any, ref: str) -> None:
    """Remove the tag `ref` (the image stays under its other tags); best effort on the way out of a
    failure: the failure being raised is the message, and the engine may be the thing that failed."""
    import requests
    from docker.errors import DockerException

    try:
        client.api.remove_image(ref, noprune=True)
    except (DockerException, requests.RequestException, OSError):
        return

    signals.cleaned(f"removed the local tag {ref}")
