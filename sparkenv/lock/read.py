"""The one reader of locks: every command that reads a lock gets the same frozen Lock (model.py).

- `sparkenv_lock(path)` — a lock `sparkenv lock` wrote, for `build` (its requirements.<profile>.txt
  given instead names the pylock beside it): the pylock validated as PEP 751, its `[tool.sparkenv]`
  table type-checked, every package's stage one of the table's stages, and the hashed requirements
  file beside it pinning exactly the pylock's packages and hashes.
- `pylock(path)` — the same without the requirements file (`lock --check` judges that one itself).
- `given(path)` — whatever `audit --lock` is handed: a pylock (sparkenv's, or any tool's) or a
  requirements file (hashed or not), for the versions it pins.

Every problem is one SparkenvError naming the file and what is wrong (exit 2).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from sparkenv.core import confine, safe_read, schema
from sparkenv.core.errors import SparkenvError
from sparkenv.core.redact import excerpt
from sparkenv.facts.lock import FORMAT, Lock, LockedPackage, LockStage

REQUIREMENTS_LIMIT = 16 << 20
# Stage names become file names in the build context (requirements.<stage>.txt): no folders.
_STAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_INTEGER = schema.Kind("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool))
_TOOL = {
    "format": _INTEGER,
    "profile": schema.STRING,
    "profile-hash": schema.STRING,
    "profile-file": schema.STRING,
    "image": schema.STRING,
    "digest": schema.STRING,
    "platform": schema.STRING,
    "python-platform": schema.STRING,
    "inputs": schema.STRINGS,
    "input-hash": schema.STRING,
    "requirements-hash": schema.STRING,
    "excluded": schema.STRINGS,
    "allow-replace": schema.STRINGS,
    "exclude-newer": schema.STRING,
    "stages": schema.STRINGS,
    "no-deps-stages": schema.STRINGS,
    "requirements": schema.STRING,
    "index-url": schema.STRING,
    "extra-index-urls": schema.STRINGS,
}


class OtherFormat(SparkenvError):
    """A lock of another [tool.sparkenv] format: this sparkenv cannot read it; re-lock."""

    def __init__(self, path: str, found: object) -> None:
        self.found = found
        super().__init__(
            f"{path}: written by sparkenv lock format {found!r}, this sparkenv reads format {FORMAT}: "
            "re-lock it (sparkenv lock INPUT…)"
        )


def is_pylock(path: Path) -> bool:
    """PEP 751 names: pylock.toml, pylock.<name>.toml."""
    return path.name.startswith("pylock") and path.suffix == ".toml"


def given(path_arg: str) -> Lock:
    """The lock `audit --lock` is handed: a pylock (any tool's) or a requirements file."""
    path = Path(path_arg)
    safe_read.require_regular(path, what="a lock file")
    if is_pylock(path):
        return _pylock(path, path_arg, foreign_ok=True)
    return _requirements_lock(path, path_arg)


def pylock(path: Path) -> Lock:
    """A pylock `sparkenv lock` wrote; its [tool.sparkenv] table is required."""
    return _pylock(path, str(path), foreign_ok=False)


def sparkenv_lock(path: Path) -> Lock:
    """A pylock.<profile>.toml written by `sparkenv lock` (or its requirements.<profile>.txt), with the
    hashed requirements file beside it checked against it."""
    if path.name.startswith("requirements.") and path.suffix == ".txt":
        path = path.with_name(
            "pylock." + path.name.removeprefix("requirements.").removesuffix(".txt") + ".toml"
        )
    if not path.is_file():
        raise SparkenvError(f"{path}: no such lock (write one with `sparkenv lock INPUT…`)")
    lock = pylock(path)
    if not any(stage.packages for stage in lock.stages):
        raise SparkenvError(f"{path}: locks no package (nothing beyond the base): nothing to build")
    req = requirements_file(lock)
    try:
        safe_read.read_text(req, what="the lock's hashed requirements", limit=REQUIREMENTS_LIMIT)
    except safe_read.UnreadableFile as exc:
        raise SparkenvError(f"{req}: cannot read the lock's hashed requirements: {exc.reason}") from None
    _agrees(lock, req, _parse_requirements(req))
    return lock


def requirements_file(lock: Lock) -> Path:
    """The hashed requirements file the lock names: a file beside it, inside its project (a lock from
    another repository must not make sparkenv read outside it)."""
    where = f"{lock.path}: [tool.sparkenv] requirements"
    if not lock.requirements:
        raise SparkenvError(f"{lock.path}: [tool.sparkenv] names no requirements file")
    folder = lock.file.parent
    return confine.inside(
        confine.project_root(folder, folder.parent),
        confine.plain_name(lock.requirements, where),
        folder,
        where,
    )


def from_text(text: str, path: Path) -> Lock:
    """A pylock's text as the reader sees it: what the writer renders the requirements file from."""
    from sparkenv.core.datafiles import parse_toml

    return _parsed(parse_toml(text), str(path), foreign_ok=False, sha256=Lock.digest_of(text.encode()))


# ---- the pylock ------------------------------------------------------------------------------------


def _pylock(path: Path, shown: str, foreign_ok: bool) -> Lock:
    from sparkenv.core.datafiles import read_user_toml

    data = read_user_toml(path, "a pylock.toml lock")
    try:
        sha = Lock.digest_of(path.read_bytes())
    except OSError as exc:  # read a moment ago: gone or changed since
        raise SparkenvError(f"{shown}: cannot read the lock: {exc.strerror}") from None
    return _parsed(data, shown, foreign_ok, sha)


def _parsed(data: dict[str, Any], path: str, foreign_ok: bool, sha256: str) -> Lock:
    from packaging.pylock import Pylock, PylockValidationError

    try:
        lock = Pylock.from_dict(data)
    except PylockValidationError as exc:
        raise SparkenvError(f"{path}: not a valid PEP 751 lock: {exc}") from None
    tools = data.get("tool")
    tool = tools.get("sparkenv") if isinstance(tools, dict) else None
    if tool is None:
        if not foreign_ok:
            raise SparkenvError(f"{path}: no [tool.sparkenv] table: not written by sparkenv lock")
        return Lock(path, _packages(lock, data, ""), sha256=sha256)
    if not isinstance(tool, dict):
        raise SparkenvError(f"{path}: [tool.sparkenv] must be a table, got {schema.describe(tool)}")
    schema.check(tool, _TOOL, path, "[tool.sparkenv] ")
    if tool.get("format") != FORMAT:
        raise OtherFormat(path, tool.get("format"))
    packages = _packages(lock, data, path)
    return Lock(
        path,
        packages,
        sparkenv=True,
        format=FORMAT,
        profile=tool.get("profile", ""),
        profile_hash=tool.get("profile-hash", ""),
        profile_file=tool.get("profile-file", ""),
        image=tool.get("image", ""),
        digest=tool.get("digest", ""),
        platform=tool.get("platform", ""),
        python_platform=tool.get("python-platform", ""),
        requires_python=str(lock.requires_python or ""),
        inputs=tuple(tool.get("inputs", ())),
        input_hash=tool.get("input-hash", ""),
        requirements_hash=tool.get("requirements-hash", ""),
        excluded=frozenset(canonicalize_name(n) for n in tool.get("excluded", ())),
        allow_replace=frozenset(canonicalize_name(n) for n in tool.get("allow-replace", ())),
        exclude_newer=tool.get("exclude-newer", ""),
        stages=_stages(tool, packages, path),
        index_url=tool.get("index-url", ""),
        extra_index_urls=tuple(tool.get("extra-index-urls", ())),
        requirements=tool.get("requirements", ""),
        sha256=sha256,
    )


def _packages(lock: Any, data: dict[str, Any], sparkenv_lock: str) -> tuple[LockedPackage, ...]:
    # the marker as the file spells it (packaging would re-quote it), for the requirements file
    raw = [p.get("marker") for p in data.get("packages") or ()]
    return tuple(_package(p, m, sparkenv_lock) for p, m in zip(lock.packages, raw, strict=True))


def _package(pkg: Any, marker: str | None, sparkenv_lock: str) -> LockedPackage:
    """One [[packages]] entry; in a lock sparkenv wrote (`sparkenv_lock` names it) its stage is required."""
    stage = ""
    if sparkenv_lock:
        tool = (pkg.tool or {}).get("sparkenv")
        stage = tool.get("stage") if isinstance(tool, dict) else None
        if not isinstance(stage, str) or not stage:
            raise SparkenvError(
                f"{sparkenv_lock}: package {pkg.name} has no [packages.tool.sparkenv] stage "
                "(every package of a sparkenv lock names its install stage): re-lock it"
            )
    hashes = [w.hashes.get("sha256", "") for w in pkg.wheels or ()]
    if pkg.sdist is not None:
        hashes.append(pkg.sdist.hashes.get("sha256", ""))
    return LockedPackage(
        name=canonicalize_name(pkg.name),
        version=str(pkg.version) if pkg.version else None,
        stage=stage,
        marker=marker or None,
        hashes=tuple(h for h in hashes if h),
    )


def _stages(tool: dict[str, Any], packages: tuple[LockedPackage, ...], path: str) -> tuple[LockStage, ...]:
    """The install stages in the table's order, each with its packages; the table and the packages'
    own stage entries must agree, both ways."""
    names = list(tool.get("stages", ()))
    no_deps = list(tool.get("no-deps-stages", ()))
    for name in names:
        if not _STAGE_NAME.fullmatch(name):
            raise SparkenvError(
                f"{path}: [tool.sparkenv] stages: {name!r} is not a stage name (letters, digits, . _ -)"
            )
    if len(set(names)) != len(names):
        raise SparkenvError(f"{path}: [tool.sparkenv] stages lists a stage twice: {', '.join(names)}")
    unknown = [n for n in no_deps if n not in names]
    if unknown:
        raise SparkenvError(
            f"{path}: [tool.sparkenv] no-deps-stages names {unknown[0]}, which stages does not list "
            f"({', '.join(names) or 'none'}): the lock's stage tables disagree; re-lock it"
        )
    for pkg in packages:
        if pkg.stage not in names:
            raise SparkenvError(
                f"{path}: package {pkg.name} is in stage {pkg.stage}, which [tool.sparkenv] stages does not "
                f"list ({', '.join(names) or 'none'}): the lock's stage tables disagree; re-lock it"
            )
    return tuple(
        LockStage(name, name in no_deps, tuple(p for p in packages if p.stage == name)) for name in names
    )


# ---- requirements files -------------------------------------------------------------------------------


def _agrees(lock: Lock, req: Path, pinned: Pinned) -> None:
    """The hashed requirements file pins what the pylock locks, with the same hashes: one lock, two
    spellings. A hand-edited one would build something the lock's hash does not name."""
    problem = disagreement(lock, pinned)
    if problem:
        raise SparkenvError(f"{req}: disagrees with {lock.path}: it {problem}; re-lock (sparkenv lock)")


def disagreement(lock: Lock, pinned: Pinned) -> str:
    """How the hashed requirements file's pins (`pinned`) differ from the pylock, first difference
    only ("pins x==2.0, pylock… locks 1.0"); "" when they agree. Build refuses such a pair and
    `lock --check` calls it stale: one judgement of the two spellings."""
    locked = {p.name: (p.version, frozenset(p.hashes)) for p in lock.packages}
    for name in sorted(locked.keys() | pinned.keys()):
        if name not in pinned:
            return f"lacks {name}, which {lock.file.name} locks"
        if name not in locked:
            return f"pins {name}, which {lock.file.name} does not lock"
        if pinned[name][0] != locked[name][0]:
            return f"pins {name}=={pinned[name][0]}, {lock.file.name} locks {locked[name][0]}"
        if pinned[name][1] != locked[name][1]:
            return f"has other hashes for {name} than {lock.file.name}"
    return ""


def requirements_disagreement(lock: Lock) -> str:
    """`disagreement` of the lock and the hashed requirements file it names, read safely; "" when they
    agree or the file is missing (said elsewhere). An unreadable file is SparkenvError naming it."""
    req = requirements_file(lock)
    if not req.is_file() and not req.is_symlink():
        return ""
    try:
        safe_read.read_text(req, what="the lock's hashed requirements", limit=REQUIREMENTS_LIMIT)
    except safe_read.UnreadableFile as exc:
        raise SparkenvError(f"{req}: cannot read the lock's hashed requirements: {exc.reason}") from None
    return disagreement(lock, _parse_requirements(req))


def _requirements_lock(path: Path, shown: str) -> Lock:
    from sparkenv.lock.includes import prescan

    prescan(path, shown)
    pinned = _parse_requirements(path, include_nested=True)
    return Lock(shown, tuple(LockedPackage(n, v, hashes=tuple(sorted(h))) for n, (v, h) in pinned.items()))


Pinned = dict[str, tuple[str | None, frozenset[str]]]  # normalized name -> (exact version, sha256 hashes)


def _parse_requirements(path: Path, include_nested: bool = False) -> Pinned:
    """Normalized name -> (exact version or None, sha256 hashes), in pip's own syntax. A line that pins
    nothing (`numpy`, `numpy>=1`) is a name without a version, as the audit's drift check reads it."""
    from pip_requirements_parser import RequirementsFile

    from sparkenv.core.pins import exact_pin

    try:
        # from_file, never from_string (it needs a temporary file, and breaks on pathlib): the caller has
        # read the file through safe_read first, so it is a regular file of a sane size
        parsed = RequirementsFile.from_file(str(path), include_nested=include_nested)
    except Exception as exc:  # the parser raises assorted types on unreadable files
        raise SparkenvError(f"{path}: unreadable requirements file: {exc}") from None
    if parsed.invalid_lines:
        bad = parsed.invalid_lines[0]
        first = bad.error_message.splitlines()[0] if bad.error_message else "invalid line"
        raise SparkenvError(f"{bad.filename}:{bad.line_number}: {excerpt(first)}")
    out: Pinned = {}
    for req in parsed.requirements:
        if req.name:
            hashes = frozenset(h.removeprefix("sha256:") for h in req.hash_options if h.startswith("sha256:"))
            # the parser's specifier is None for a bare name (a TypeError in exact_pin before)
            out[canonicalize_name(req.name)] = (exact_pin(req.specifier or ()), hashes)
    return out
