"""Drive `uv pip compile` for a target platform: one process per resolution, each with a timeout.

uv runs in its own process group (its own session), so a timeout, Ctrl-C, SIGTERM or SIGHUP stops uv and
everything it started, not only its first process.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkenv.core.errors import ServiceMissing, SparkenvError
from sparkenv.core.redact import excerpt
from sparkenv.index.uv_binary import uv_binary
from sparkenv.lock import preferences
from sparkenv.lock.preferences import KEEP, Upgrade
from sparkenv.lock.uv_process import RUST_LOG, Running, environment, stopped

if TYPE_CHECKING:
    from sparkenv.environment.profiles import Profile

__all__ = ["RUST_LOG", "Running", "environment", "stopped"]  # started here, run in lock/uv_process.py

DEFAULT_TIMEOUT = 180.0  # the lock's --timeout, index/deadline.py TOTAL_S
_UNREACHABLE = re.compile(
    r"(Failed to fetch|error sending request|Connection refused|dns error|tcp connect error|timed out|"
    r"operation timed out|Could not connect|Network is unreachable|client error \(Connect\))",
    re.IGNORECASE,
)

_TIMED_OUT = re.compile(r"\boperation timed out\b", re.IGNORECASE)


@dataclass
class Stage:
    name: str
    lines: list[str]  # requirement lines
    no_deps: bool = False
    constraints: list[str] = field(default_factory=list)


@dataclass
class IndexOptions:
    index_url: str | None = None
    extra_index_urls: list[str] = field(default_factory=list)
    find_links: list[str] = field(default_factory=list)


def command(
    uv: str,
    stage_in: Path,
    out: Path,
    profile: Profile,
    index: IndexOptions,
    excludes: Path | None,
    stage: Stage,
    exclude_newer: str | None = None,
    upgrade_packages: tuple[str, ...] = (),
) -> list[str]:
    """The exact `uv pip compile` command of a stage (the benchmark runs the same one bare)."""
    cmd = [
        uv,
        "pip",
        "compile",
        str(stage_in),
        "--python-platform",
        profile.python_platform,
        "--python-version",
        profile.python_minor,
        "--generate-hashes",
        "--format",
        "pylock.toml",
        "--output-file",
        str(out),
        "--no-header",
        "--quiet",
        "--no-python-downloads",
    ]
    if excludes is not None:
        cmd += ["--excludes", str(excludes)]
    if stage.no_deps:
        cmd.append("--no-deps")
    if exclude_newer:
        cmd += ["--exclude-newer", exclude_newer]
    for name in upgrade_packages:
        cmd += ["--upgrade-package", name]
    if index.index_url:
        cmd += ["--index-url", index.index_url]
    for url in index.extra_index_urls:
        cmd += ["--extra-index-url", url]
    for link in index.find_links:
        cmd += ["--find-links", link]
    return cmd


def plan(
    work: Path,
    profile: Profile,
    index: IndexOptions,
    stages: list[Stage],
    excluded: list[str] | None = None,
    exclude_newer: str | None = None,
    previous: Path | None = None,
    upgrade: Upgrade = KEEP,
) -> tuple[list[tuple[Stage, list[str], Path]], dict[str, str]]:
    """Each stage's job (stage, uv's command, its output file) and the files the commands read, by name
    in `work` (nothing written: `prepare` writes them; a cached command is compared with them before).
    `excluded`: names kept out of resolution (default: all the base provides). `previous`: the lock
    about to be replaced, whose versions uv prefers (lock/preferences.py) unless `upgrade` says."""
    uv = uv_binary()
    files: dict[str, str] = {}
    excludes = None
    names = profile.excluded() if excluded is None else excluded
    if names:
        excludes = work / "excludes.txt"
        files[excludes.name] = "\n".join(names) + "\n"
    jobs = []
    kept = preferences.text(previous, upgrade)  # the same lock for every stage: read once
    for stage in stages:
        stage_in = work / f"{stage.name}.in"
        body = list(stage.lines)
        if stage.constraints:
            cons = work / f"{stage.name}.constraints.txt"
            files[cons.name] = "\n".join(stage.constraints) + "\n"
            body.insert(0, f"-c {cons}")
        files[stage_in.name] = "\n".join(body) + "\n"
        out = work / f"pylock.{stage.name}.toml"
        if kept is not None:  # uv reads its output file's versions as preferences
            files[out.name] = kept
        cmd = command(uv, stage_in, out, profile, index, excludes, stage, exclude_newer, upgrade.packages)
        jobs.append((stage, cmd, out))
    return jobs, files


def write(work: Path, files: dict[str, str]) -> None:
    """The files of a plan, into the work folder."""
    from sparkenv.core.errors import writing

    for name, text in files.items():
        with writing(work / name):  # the work folder is in TMPDIR, which may be full
            (work / name).write_text(text, encoding="utf-8")


def prepare(work: Path, *args: Any, **kwargs: Any) -> list[tuple[Stage, list[str], Path]]:
    """The jobs of `plan` (same arguments), their files written into `work`."""
    jobs, files = plan(work, *args, **kwargs)
    write(work, files)
    return jobs


def _netrc_lines(index: IndexOptions) -> list[str]:
    if not (index.index_url or index.extra_index_urls):
        return []  # nothing to look up: uv starts sooner
    from sparkenv.index import credentials

    urls = [u for u in (index.index_url, *index.extra_index_urls) if u and not credentials.in_url(u)]
    return credentials.netrc_lines(urls, netrc=False)


def needs_netrc(index: IndexOptions) -> bool:
    """Whether `netrc_env` would write a netrc (a credential only pip's variables hold)."""
    return bool(_netrc_lines(index))


def netrc_env(work: Path, index: IndexOptions) -> dict[str, str]:
    """uv reads an index's credential from the URL or netrc, not from pip's variables (PIP_INDEX_URL): a
    credential only pip's variables hold is handed to uv through a netrc in the work folder (mode 0600,
    removed with the folder), the user's own netrc copied in first. Empty when uv needs nothing more."""
    lines = _netrc_lines(index)
    if not lines:
        return {}
    own = Path(os.environ.get("NETRC") or os.path.expanduser("~/.netrc"))
    try:
        text = own.read_text(encoding="utf-8") + "\n"
    except (OSError, UnicodeDecodeError):
        text = ""
    path = work / "netrc"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text + "\n".join(lines) + "\n")
    return {"NETRC": str(path)}


def start(
    job: tuple[Stage, list[str], Path],
    timeout: float = DEFAULT_TIMEOUT,
    extra_env: dict[str, str] | None = None,
    log: bool = False,
) -> Running:
    """Start one stage's uv and return at once. `log`: uv writes its resolver's decisions (RUST_LOG) for
    Running.read_log."""
    stage, cmd, out = job
    return Running(stage, cmd, out, timeout, environment(extra_env, log), log, error)


class Failed(SparkenvError):
    """uv could not make one named package part of the set (build, download or resolve it): a finding, not
    the end of the lock; the lock resolves again without `key` (lock/resolving.py). `raw`: uv's whole stderr,
    shown only under SPARKENV_DEBUG=1."""

    key: str
    raw: str


class BuildFailed(Failed):
    """uv could not build (or download) one named package: a finding, not the end of the lock.
    `cause` is the first line of the real cause (the build's own exception, not uv's wrapping);
    `raw` is uv's whole stderr, shown only under SPARKENV_DEBUG=1."""

    def __init__(
        self,
        stage: str,
        spec: str,
        key: str,
        version: str,
        action: str,
        cause: str,
        raw: str,
        index: str = "",
    ):
        super().__init__(f"uv could not {action} {spec} ({stage} stage): {cause}")
        self.index = index  # the index the build said it downloads from, when it said so
        self.spec, self.key, self.version, self.action, self.cause, self.raw = (
            spec,
            key,
            version,
            action,
            cause,
            raw,
        )


# uv's words for a package it could not make: `Failed to build `x==1``, `Failed to download and build …`
_FAILED = re.compile(r"Failed to (download and build|build|download|fetch|prepare)[^`]*`([^`]+)`")
# The build's own exception (last traceback line) or an error line it printed itself
_EXTRA_INDEX = re.compile(r"--extra-index-url[= ](https?://\S+)")
_RAISED = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Exit)|error|ERROR)\b:?\s")


def build_failure(stage: str, stderr: str) -> BuildFailed | None:
    """A build or download failure of one package in uv's stderr, or None when it is something else."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    from sparkenv.core.pins import exact_pin

    m = _FAILED.search(stderr)
    if m is None:
        return None
    action, spec = m.group(1), m.group(2).strip()
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return None
    version = exact_pin(req.specifier) or ""
    inner = []  # what the build itself printed ([stderr]/[stdout] blocks of uv's message)
    causes = []
    for line in stderr.splitlines():
        text = line.strip()
        if text.startswith("cause:"):
            causes.append(text.removeprefix("cause:").strip())
        elif line.startswith("         ") and text and not text.startswith("["):
            inner.append(text)
    raised = [t for t in inner if _RAISED.match(t)]
    cause = raised[-1] if raised else (causes[-1] if causes else f"uv could not {action} it")
    # a placeholder wheel ("wheel stub") downloads the real wheel from another index while it builds and
    # names that index in its message: `pip install --extra-index-url URL name`
    index = next((m.group(1) for t in inner if (m := _EXTRA_INDEX.search(t))), "")
    return BuildFailed(stage, spec, canonicalize_name(req.name), version, action, cause, stderr, index)


class Unresolvable(Failed):
    """uv found no set of versions: `key` is the package its reasoning starts from ("" when its words name
    none), `kind` what stops it (rules/unresolved.py KINDS), `tried` the release uv names (`speechy==2.0`),
    `cause` uv's reasoning in one line, `platforms` its hint's list of platforms that have wheels."""

    def __init__(self, stage: str, key: str, kind: str, tried: str, cause: str, platforms: str, raw: str):
        super().__init__(f"no set of versions satisfies the inputs ({stage} stage): {cause}")
        self.key, self.kind, self.tried, self.cause, self.platforms, self.raw = (
            key, kind, tried, cause, platforms, raw,
        )  # fmt: skip


# a name where uv's words start one (never the version after `faiss-gpu>=`), then its comparison, if any
_NAME = r"(?<![\w.=<>~!-])([A-Za-z0-9][A-Za-z0-9._-]*)"
_OP = r"(?:(?:==|>=|<=|~=|!=|<|>)(\S+))?"
# uv's reasoning, first match wins: (kind, pattern whose first group names the package, second the version)
_UNRESOLVABLE = (
    ("platform", re.compile(_NAME + _OP + r" has no wheels with a matching platform tag")),
    (
        "abi",
        re.compile(_NAME + _OP + r" has no wheels with a matching Python (?:ABI|implementation) tag"),
    ),
    ("python", re.compile(_NAME + _OP + r" (?:requires|depends on) Python")),
    ("refused", re.compile(_NAME + r"() (?:was not found in|could not be fetched from) the package regist")),
    ("version", re.compile(r"there (?:is|are) no versions? of " + _NAME + r"()")),
    ("version", re.compile(r"only " + _NAME + r"()\S* (?:is|are) available")),
    ("conflict", re.compile(r"depends? on " + _NAME + r"()")),
    ("conflict", re.compile(r"you require " + _NAME + r"()")),
)
# the hint that lists where wheels exist: "Wheels are available for `x` (v2.0) on the following platform: …"
_PLATFORMS = re.compile(
    r"Wheels are available for `[^`]+` \(v([^)]*)\) on the following platforms?: "
    r"((?:`[^`]+`(?:,? and |, )?)+)"
)
_REFUSED = re.compile(r"(\d{3} [A-Z][A-Za-z ]+)\)")


def unresolvable(stage: str, stderr: str) -> Unresolvable | None:
    """uv's "No solution found" read: the package its reasoning is about and why; None for other errors."""
    from packaging.utils import canonicalize_name

    if "No solution found" not in stderr:
        return None
    because, hints = [], []
    for line in stderr.splitlines():
        text = line.strip().lstrip("╰─▶").strip()
        if not text or text.startswith(("×", "error:", "warning:")):
            continue
        if text.startswith("hint:"):
            hints.append(text.removeprefix("hint:").strip())
        else:
            because.append(text.removeprefix("cause:").strip())
    cause = " ".join(" ".join(because).split())
    hint = " ".join(" ".join(hints).split())
    found = next(((k, m) for k, pattern in _UNRESOLVABLE if (m := pattern.search(cause))), None)
    kind, key, tried = "unknown", "", ""
    if found is not None:
        kind, key, tried = found[0], canonicalize_name(found[1].group(1)), found[1].group(2) or ""
    refused = _REFUSED.search(hint) if kind == "refused" else None
    if refused and "could not be queried" in hint:
        cause = f"the index refused the request ({refused.group(1)}): {cause}"
    elif kind == "refused":
        kind = "not-found"
    m = _PLATFORMS.search(hint)
    platforms = m.group(2).replace("`", "").strip().rstrip(".") if m else ""
    if m and kind == "platform":  # the release uv tried last, as its hint names it
        tried = m.group(1)
    return Unresolvable(stage, key, kind, tried, cause or "no message", platforms, stderr)


def error(stage: Stage, stderr: str) -> SparkenvError:
    unresolved = unresolvable(stage.name, stderr)
    if unresolved is not None:
        return unresolved
    failed = build_failure(stage.name, stderr)
    # a download that fails because the index cannot be reached is a missing service (exit 3), not a
    # finding about the package; a build that fails is one, whatever its own error says
    if (
        failed is not None
        and "No solution found" not in stderr
        and ("build" in failed.action or not _UNREACHABLE.search(stderr))
    ):
        return failed
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith("warning:")]
    text = " ".join(lines)
    if _TIMED_OUT.search(text) and "No solution found" not in text:
        from sparkenv.index import deadline

        # uv's request passed UV_HTTP_TIMEOUT (the per-request deadline) on every try: one line, no URL
        return ServiceMissing(deadline.request_message())
    if _UNREACHABLE.search(text) and "No solution found" not in text:
        cause = next((ln for ln in lines if "cause:" in ln or "error:" in ln), lines[0] if lines else "")
        return ServiceMissing(
            f"package index unreachable while resolving ({stage.name}): {excerpt(cause, 400)}"
        )
    if "No solution found" in text or "unsatisfiable" in text:
        detail = " ".join(ln.lstrip("╰─▶ ").strip() for ln in lines if not ln.startswith("×"))
        return SparkenvError(f"no set of versions satisfies the inputs ({stage.name} stage): {detail}")
    # uv quotes the line it could not read: bounded and redacted, as every quoted input line
    return SparkenvError(f"uv pip compile failed ({stage.name} stage): {excerpt(text, 400) or 'no message'}")
