"""Turn what the user named (venv, site-packages folder, interpreter, nothing) into folders to read."""

from __future__ import annotations

import os
import platform
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from sparkenv.core import safe_read
from sparkenv.core.errors import SparkenvError
from sparkenv.core.printable import printable
from sparkenv.cuda import elf
from sparkenv.environment import interpreter

_PYVER_IN_PATH = re.compile(r"python(\d+\.\d+)")
_HOST_MACHINES = {"amd64": "x86_64", "arm64": "aarch64"}


@dataclass(frozen=True)
class Target:
    description: str  # what the report names as its target
    site_dirs: tuple[Path, ...]
    machine: str  # ELF machine name the environment runs: "aarch64", "x86_64" …
    machine_source: str  # how the machine was learnt, for the evidence
    python_version: str | None  # "3.12"
    interpreter: Path | None

    def read_what(self) -> str:
        """The environment by its interpreter and the folder read: the first thing an audit says."""
        where = str(self.site_dirs[0]) if self.site_dirs else self.description
        more = f" (+{len(self.site_dirs) - 1} more)" if len(self.site_dirs) > 1 else ""
        return f"{self.interpreter}'s {where}{more}" if self.interpreter else f"{where}{more}"


def host_machine() -> str:
    m = platform.machine().lower()
    return _HOST_MACHINES.get(m, m)


def resolve(arg: str | None, machine: str | None = None) -> Target:
    """Resolve TARGET; raise SparkenvError (exit 2) with a one-line reason when it is not an environment."""
    if arg is None:
        venv = os.environ.get("VIRTUAL_ENV")
        if venv and Path(venv).is_dir():
            return _from_prefix(Path(venv), f"$VIRTUAL_ENV ({venv})", machine)
        dirs = tuple(
            Path(p) for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)
        )
        return _finish(f"the running interpreter ({sys.executable})", dirs, Path(sys.executable), machine)

    # a bare name is looked up on PATH, a shim (pyenv's) asked for its real interpreter, as uv does
    path = Path(interpreter.real(os.path.expanduser(arg)))

    try:
        st = safe_read.stat_target(path)
    except safe_read.UnreadableFile as exc:  # a symlink loop, a broken link, no such file …
        reason = "no such file or directory" if exc.reason == "no such file" else exc.reason
        raise SparkenvError(
            f"{arg}: {reason} (expected a venv, a site-packages folder or a Python interpreter)"
        ) from None
    if stat.S_ISREG(st.st_mode):
        return _from_interpreter(path, arg if str(path) == arg else f"{arg} ({path})", machine)
    if not stat.S_ISDIR(st.st_mode):  # /dev/null is a character device, not a permission problem
        raise SparkenvError(
            f"{arg}: {safe_read.kind_of(st.st_mode)}, not a venv, a site-packages folder or a Python "
            "interpreter"
        )
    if not os.access(path, os.R_OK | os.X_OK):
        raise SparkenvError(f"{arg}: permission denied")
    if _holds_distributions(path):
        return _finish(str(path), (path,), _interpreter_near_site(path), machine)
    return _from_prefix(path, str(path), machine)


def _holds_distributions(folder: Path) -> bool:
    try:
        return any(n.endswith((".dist-info", ".egg-info")) for n in os.listdir(folder))
    except OSError:
        return False


def _from_interpreter(path: Path, arg: str, machine: str | None) -> Target:
    name = path.name
    if not name.startswith("python"):
        raise SparkenvError(f"{arg}: not a Python interpreter, a venv or a site-packages folder")
    bin_dir = path.parent
    prefix = bin_dir.parent
    real = path.resolve()
    version = _version_from_name(real.name) or _version_from_name(name) or _pyvenv_version(prefix)
    dirs = _site_dirs(prefix, version)
    if (prefix / "pyvenv.cfg").is_file():
        dirs += _base_site_dirs(prefix, version)
    if not dirs and real.parent.parent != prefix:  # a symlink into another prefix (e.g. /usr/bin/python3)
        dirs = _site_dirs(real.parent.parent, version)
    if not dirs:
        raise SparkenvError(f"{arg}: no site-packages folder found for this interpreter under {prefix}")
    return _finish(f"{arg}", tuple(dirs), path, machine)


def _from_prefix(prefix: Path, description: str, machine: str | None) -> Target:
    version = _pyvenv_version(prefix)
    dirs = _site_dirs(prefix, version)
    if (prefix / "pyvenv.cfg").is_file():
        dirs += _base_site_dirs(prefix, version)
    if not dirs:
        raise SparkenvError(
            f"{description}: no site-packages folder found (expected a venv, a site-packages folder "
            "or a Python interpreter)"
        )
    interpreter = next(
        (p for p in (prefix / "bin" / "python3", prefix / "bin" / "python") if _usable(p)), None
    )
    return _finish(description, tuple(dirs), interpreter, machine)


def _usable(interpreter: Path) -> bool:
    """Whether a venv's bin/python* is there; SparkenvError naming it when it links into a folder this
    user cannot read (another user's interpreter): its machine and version are unknowable, and reading
    the venv as if it had none would judge it for the wrong machine."""
    try:
        safe_read.stat_target(interpreter)
    except safe_read.UnreadableFile as exc:
        if exc.reason != "permission denied":
            return False  # no such file, a broken link: a venv without this name
        raise SparkenvError(
            f"{interpreter}: permission denied (it links to {printable(os.path.realpath(interpreter))}, in a "
            "folder this user cannot read; run as a user who can)"
        ) from None
    return True


def _site_dirs(prefix: Path, version: str | None) -> list[Path]:
    found: list[Path] = []
    for lib in ("lib", "lib64", "local/lib"):
        base = prefix / lib
        try:
            names = sorted(os.listdir(base))
        except OSError:
            continue
        for name in names:
            if not name.startswith("python") or (version and name not in (f"python{version}", "python3")):
                continue
            for leaf in ("site-packages", "dist-packages"):
                candidate = base / name / leaf
                if candidate.is_dir() and candidate.resolve() not in {f.resolve() for f in found}:
                    found.append(candidate)
    return found


def _base_site_dirs(venv: Path, version: str | None) -> list[Path]:
    """A venv made with --system-site-packages also sees its base interpreter's packages."""
    cfg = _pyvenv_cfg(venv)
    if cfg.get("include-system-site-packages", "false").lower() != "true" or "home" not in cfg:
        return []
    return _site_dirs(Path(cfg["home"]).parent, version)


def _pyvenv_cfg(prefix: Path) -> dict[str, str]:
    """pyvenv.cfg's keys; {} where there is none. One that exists but cannot be read (a FIFO, a device,
    a loop) ends the audit with exit 2 naming it: the environment's layout would be a guess."""
    path = prefix / "pyvenv.cfg"
    if not os.path.lexists(path):
        return {}
    text = safe_read.read_text(path, what="a pyvenv.cfg file", limit=1 << 20, errors="strict")
    if "\0" in text:
        raise SparkenvError(f"{path}: damaged (it holds NUL bytes); expected `key = value` lines")
    pairs = (line.partition("=") for line in text.splitlines() if "=" in line)
    cfg = {k.strip().lower(): v.strip() for k, _, v in pairs}
    for key in ("version_info", "version"):
        if key in cfg and not re.fullmatch(r"\d+\.\d+(?:\.\S*)?", cfg[key]):
            raise SparkenvError(f"{path}: damaged: {key} = {cfg[key][:60]!r} is not a Python version")
    return cfg


def pyvenv_full_version(prefix: Path) -> str | None:
    """The environment's full Python version (X.Y.Z) as its pyvenv.cfg records it (version_info, else
    version); None where it records none or the file cannot be read (target resolution names that)."""
    try:
        cfg = _pyvenv_cfg(prefix)
    except SparkenvError:
        return None
    for key in ("version_info", "version"):
        parts = cfg.get(key, "").split(".")
        if len(parts) >= 3 and all(p.isdigit() for p in parts[:3]):
            return ".".join(parts[:3])
    return None


def _pyvenv_version(prefix: Path) -> str | None:
    cfg = _pyvenv_cfg(prefix)
    full = cfg.get("version_info") or cfg.get("version")
    if full:
        parts = full.split(".")
        return ".".join(parts[:2]) if len(parts) >= 2 else None
    return None


def _version_from_name(name: str) -> str | None:
    m = re.fullmatch(r"python(\d+\.\d+)", name)
    return m.group(1) if m else None


def _interpreter_near_site(site: Path) -> Path | None:
    # …/lib/python3.12/site-packages -> …/bin/python3
    prefix = site.parent.parent.parent
    for candidate in (prefix / "bin" / "python3", prefix / "bin" / "python"):
        if _usable(candidate):
            return candidate
    return None


def _finish(
    description: str, dirs: tuple[Path, ...], interpreter: Path | None, machine: str | None
) -> Target:
    for d in dirs:
        readable(d, description)
    version = None
    for d in dirs:
        m = _PYVER_IN_PATH.search(str(d))
        if m:
            version = m.group(1)
            break
    if version is None and interpreter is not None:
        version = _version_from_name(interpreter.resolve().name)
    if machine:
        from sparkenv.environment.profiles import canonical_machine

        return Target(description, dirs, canonical_machine(machine), "--machine", version, interpreter)
    found = _interpreter_machine(interpreter)
    if found:
        return Target(description, dirs, found, f"interpreter {interpreter}", version, interpreter)
    return Target(description, dirs, host_machine(), "this host (no interpreter found)", version, interpreter)


def readable(site: Path | str, description: str) -> list[str]:
    """The names in a site folder. One that cannot be listed is an environment sparkenv cannot read,
    never an empty one (a site-packages folder of mode 000 read as "torch is not installed", G8 PASS):
    SparkenvError naming it."""
    try:
        return os.listdir(site)
    except OSError as exc:
        why = "permission denied" if isinstance(exc, PermissionError) else (exc.strerror or str(exc))
        raise SparkenvError(
            f"{site}: cannot read {description}'s installed packages: {why} (run as a user who can read it)"
        ) from None


def _interpreter_machine(interpreter: Path | None) -> str | None:
    if interpreter is None:
        return None
    try:
        info = elf.read_file(str(interpreter.resolve()))
    except OSError:
        return None
    return info.machine if isinstance(info, elf.ElfInfo) else None
