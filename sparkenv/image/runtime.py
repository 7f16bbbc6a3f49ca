"""sparkenv's own runtime for an image: a wheel of the installed sparkenv plus the wheels of its runtime
dependencies for the image's Python and CPU (the base's own python3, as read), resolved by uv, kept to
the versions installed here (the tested set).

Both are cached under $XDG_CACHE_HOME/sparkenv (a rebuild with nothing changed builds and downloads
nothing, and the bytes stay identical, so Docker's layer cache holds).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from sparkenv.core.errors import ServiceMissing, SparkenvError
from sparkenv.environment.markers import applies

# Not carried into images: uv is only for `sparkenv lock`, which runs on the host.
LEFT_OUT = {"uv"}
DOWNLOAD_TIMEOUT = 600.0


@dataclass(frozen=True)
class Target:
    """The interpreter the image runs sparkenv with: the base's own python3 as read (base_probe), or the
    profile's for --dry-run, which reads no image."""

    python: str  # "3.12"
    machine: str  # "aarch64" | "x86_64"
    glibc: str  # "2.39"

    @property
    def key(self) -> str:
        return f"cp{self.python.replace('.', '')}-{self.machine}-glibc{self.glibc}"

    def marker_env(self) -> dict[str, str]:
        from sparkenv.environment.markers import marker_environment

        return marker_environment(self.machine, self.python)

    def python_platform(self) -> str:
        """uv's --python-platform for the image's CPU and glibc (profiles.uv_platform)."""
        from sparkenv.environment.profiles import uv_platform

        return uv_platform(self.machine, self.glibc)


def cache_dir() -> Path:
    from sparkenv.core import cache

    return cache.folder()


def package_dir() -> Path:
    """The folder of the sparkenv package this process runs: site-packages/sparkenv for an installed
    sparkenv, <checkout>/sparkenv for an editable one. Both are what the image gets."""
    return Path(__file__).resolve().parents[1]


def _package_files(root: Path) -> list[tuple[str, Path]]:
    """(path in the wheel, file) for every file of the package, sorted; byte code and symlinked folders
    (sparkenv/dockerfiles points at the checkout's dockerfiles/: templates the image never reads) left out."""
    out: list[tuple[str, Path]] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not (Path(folder) / d).is_symlink())
        for name in files:
            path = Path(folder) / name
            if path.suffix in (".pyc", ".pyo") or path.is_symlink() or name.startswith(".nfs"):
                continue
            out.append(("sparkenv/" + path.relative_to(root).as_posix(), path))
    return sorted(out)


def _dist_info() -> tuple[str, dict[str, bytes]]:
    """The installed distribution's version and the dist-info files a wheel carries (METADATA and the
    entry points); RECORD, INSTALLER and direct_url.json describe this install, not the wheel."""
    try:
        dist = metadata.distribution("sparkenv")
    except metadata.PackageNotFoundError:
        raise SparkenvError(
            f"{package_dir()}: sparkenv runs without being installed (no sparkenv dist-info): install it "
            "with pip install . (or -e .) so that sparkenv build knows its version and dependencies"
        ) from None
    # From a checkout (`python -m sparkenv` there) the metadata found first may be the egg-info that
    # setuptools leaves in the tree: PKG-INFO, same format.
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO")
    if not text or not dist.version:
        raise SparkenvError(
            f"{getattr(dist, '_path', 'sparkenv')}: sparkenv's metadata is unreadable: "
            "reinstall it (pip install .)"
        )
    files = {"METADATA": text.encode()}
    entry_points = dist.read_text("entry_points.txt")
    if entry_points:
        files["entry_points.txt"] = entry_points.encode()
    return dist.version, files


_WHEEL_FILE = b"Wheel-Version: 1.0\nGenerator: sparkenv build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def sparkenv_wheel() -> Path:
    """A py3-none-any wheel of the sparkenv this process runs, from its installed files (it is pure
    Python): the same code whether it was installed from a wheel, an index or editable. Reproducible
    (sorted, fixed dates), cached by the hash of its contents, so Docker's layer cache holds."""
    import base64
    import zipfile

    version, info_files = _dist_info()
    members: list[tuple[str, bytes]] = [
        (name, path.read_bytes()) for name, path in _package_files(package_dir())
    ]
    info = f"sparkenv-{version}.dist-info"
    members += [(f"{info}/{name}", data) for name, data in sorted(info_files.items())]
    members.append((f"{info}/WHEEL", _WHEEL_FILE))
    h = hashlib.sha256()
    for name, data in members:
        h.update(name.encode() + b"\0" + data + b"\0")
    out = cache_dir() / "wheels" / h.hexdigest()[:16]
    wheel = out / f"sparkenv-{version}-py3-none-any.whl"
    if wheel.is_file():
        return wheel
    record = []
    for name, data in members:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    members.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    import io

    from sparkenv.core import outputs

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            zi = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, data)
    outputs.write_one(wheel, buffer.getvalue(), make_parents=True)  # whole or not at all
    return wheel


def requirements() -> list[str]:
    """sparkenv's own runtime requirements (its Requires-Dist without the extras), as installed here."""
    try:
        dist = metadata.distribution("sparkenv")
    except metadata.PackageNotFoundError:
        _dist_info()  # says how to install it
        raise
    out = []
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is not None and "extra" in str(req.marker):
            continue
        if canonicalize_name(req.name) not in LEFT_OUT:
            out.append(text)
    return sorted(out)


def installed_pins(target: Target) -> dict[str, str]:
    """The versions installed here of sparkenv's runtime closure, markers evaluated for the image: the
    tested set, which the image's resolution keeps to. A dependency only the image's Python needs
    (one behind a python_version marker) is not installed here: the resolution picks it."""
    env = target.marker_env()
    pins: dict[str, str] = {}
    todo = ["sparkenv"]
    while todo:
        name = todo.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for text in dist.requires or []:
            req = Requirement(text)
            key = canonicalize_name(req.name)
            if not applies(req.marker, env) or key in LEFT_OUT or key in pins:
                continue
            try:
                pins[key] = metadata.version(req.name)
            except metadata.PackageNotFoundError:
                continue
            todo.append(req.name)
    return dict(sorted(pins.items()))


def dependency_wheels(target: Target, timeout: float = DOWNLOAD_TIMEOUT) -> list[Path]:
    """Wheels of sparkenv's runtime closure for the image's Python and CPU, resolved by uv for that
    target (`uv pip compile --python-version --python-platform`, binary only, the versions installed
    here as constraints) through uv's configured index, each download checked against the hash uv
    recorded. No pip needed here (`uv tool install sparkenv` and pipx have none). Cached per (target,
    requirements, pins): an unchanged rebuild resolves and downloads nothing."""
    wanted = requirements()
    pins = installed_pins(target)
    constraints = [f"{k}=={v}" for k, v in pins.items()]
    key = hashlib.sha256("\n".join([target.python_platform(), *wanted, "--", *constraints]).encode())
    out = cache_dir() / "runtime" / f"{target.key}-{key.hexdigest()[:16]}"
    if (out / ".complete").is_file():
        return sorted(out.glob("*.whl"))
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sparkenv-runtime-") as work:
        text = _resolve(Path(work), wanted, constraints, target, timeout)
    files = _wheels(text, target)
    out.mkdir(parents=True, exist_ok=True)
    for name, url, digest in files:
        _download(url, digest, out / name, timeout)
    (out / ".complete").write_text("\n".join(f"{n} sha256={d}" for n, _, d in files) + "\n")
    return sorted(out.glob("*.whl"))


def uv() -> str:
    """uv's binary (the `uv` package of sparkenv[build], else uv on PATH), or exit 3 naming the extra."""
    from sparkenv.lock.uvdriver import uv_binary

    try:
        return uv_binary()
    except ServiceMissing:
        raise ServiceMissing(
            "uv is not installed: `sparkenv build` resolves sparkenv's runtime wheels for the image's Python "
            "with it; install it with pip install 'sparkenv[build]' (or 'sparkenv[all]')"
        ) from None


def _resolve(work: Path, wanted: list[str], constraints: list[str], target: Target, timeout: float) -> str:
    """uv pip compile's pylock.toml text for the image's interpreter; uv in its own session, stopped
    with everything it started on a timeout, Ctrl-C, SIGTERM or SIGHUP."""
    from sparkenv.core import children, signals

    (work / "runtime.in").write_text("\n".join(wanted) + "\n")
    (work / "constraints.txt").write_text("\n".join(constraints) + "\n")
    out = work / "pylock.toml"
    cmd = [uv(), "pip", "compile", str(work / "runtime.in"), "-c", str(work / "constraints.txt")]
    cmd += ["--python-version", target.python, "--python-platform", target.python_platform()]
    cmd += ["--only-binary", ":all:", "--format", "pylock.toml", "-o", str(out), "--no-header", "--quiet"]
    cmd += ["--no-python-downloads"]
    env = {**os.environ, "UV_NO_PROGRESS": "1", "NO_COLOR": "1"}
    try:
        proc = children.spawn(cmd, env, text=True)  # its own session, killed with it on every way out
    except OSError as exc:
        raise ServiceMissing(f"cannot run uv to resolve sparkenv's runtime wheels: {exc}") from None
    try:
        with signals.raising():
            _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ServiceMissing(
            f"resolving sparkenv's runtime wheels took over {timeout:.0f} s: is the index reachable?"
        ) from None
    finally:
        children.stop(proc)
    if proc.returncode != 0:
        lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
        said = [ln for ln in lines if ln.startswith(("╰─▶", "Because", "error:"))] or lines[-1:]
        why = (said or ["no output"])[0].removeprefix("╰─▶").strip()
        raise ServiceMissing(
            f"cannot resolve sparkenv's runtime wheels for Python {target.python} {target.machine} "
            f"({target.python_platform()}) with uv: {why}; uv "
            "needs its configured index (UV_DEFAULT_INDEX, uv.toml) reachable, with wheels for that Python"
        )
    return out.read_text(encoding="utf-8")


def _wheels(text: str, target: Target) -> list[tuple[str, str, str]]:
    """(file name, URL, sha256) of one wheel per package for the target: of the wheels uv lists for it
    (a compiled one and a pure-Python one may both fit), the one the image's installer would take
    (environment/wheel_tags.best)."""
    from sparkenv.core.datafiles import parse_toml
    from sparkenv.environment import wheel_tags

    # the manylinux level uv resolved for (--python-platform, profiles.uv_platform), read as fallbacks
    # reads a profile's
    ranked = wheel_tags.accepted(
        target.python, target.machine, int(target.python_platform().rsplit("_", 1)[-1])
    )
    found = []
    for pkg in parse_toml(text).get("packages", []):
        wheels = {
            str(w.get("url", "")).rsplit("/", 1)[-1].split("#", 1)[0]: w
            for w in pkg.get("wheels") or []
            if isinstance(w, dict)
        }
        name = wheel_tags.best(wheels, ranked)
        wheel = wheels.get(name or "", {})
        if name is None or "sha256" not in (wheel.get("hashes") or {}):
            raise ServiceMissing(
                f"uv named no hashed wheel of {pkg.get('name')} for Python {target.python} "
                f"{target.machine}: sparkenv's runtime needs binary wheels for the image's Python"
            )
        found.append((name, str(wheel["url"]), str(wheel["hashes"]["sha256"])))
    return found


def _download(url: str, digest: str, dest: Path, timeout: float) -> None:
    """One wheel, by the URL uv resolved (an index's credentials where uv and pip read them), kept only
    when its sha256 is the one uv recorded."""
    import urllib.error
    import urllib.parse
    import urllib.request

    from sparkenv.core import outputs
    from sparkenv.core.redact import redact
    from sparkenv.index import credentials

    if dest.is_file() and sha256(dest) == digest:
        return
    try:
        if url.startswith("file:"):
            data = Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path)).read_bytes()
        else:
            with urllib.request.urlopen(credentials.request(url), timeout=timeout) as resp:
                data = resp.read()
    except (OSError, urllib.error.URLError, ValueError) as exc:
        raise ServiceMissing(f"cannot download {redact(url)} (sparkenv's runtime): {exc}") from None
    got = hashlib.sha256(data).hexdigest()
    if got != digest:
        raise ServiceMissing(
            f"{redact(url)}: sha256 {got}, not the {digest} uv resolved: the index served another file"
        )
    outputs.write_one(dest, data, make_parents=True)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def requirements_txt(wheels: list[Path], folder: str) -> str:
    """A hashed requirements file that installs exactly these wheels, offline, from `folder`."""
    from packaging.utils import parse_wheel_filename

    lines = [f"--find-links {folder}"]
    for w in sorted(wheels, key=lambda p: p.name):
        name, version, _, _ = parse_wheel_filename(w.name)
        lines.append(f"{name}=={version} --hash=sha256:{sha256(w)}")
    return "\n".join(lines) + "\n"
