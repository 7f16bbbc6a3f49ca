"""What a re-lock keeps: the versions of the lock already in the output folder.

`uv pip compile -o FILE` reads the FILE it is about to replace and prefers the versions it names, so a
re-run only moves what the inputs make move (`--upgrade` / `--upgrade-package NAME` let versions move;
uv's CLI reference, --output-file: https://docs.astral.sh/uv/reference/cli/#uv-pip-compile; seen with
uv 0.13: its resolver log says `Selecting: name==version [preference]` for each kept version).
`sparkenv lock` has uv write into a fresh work folder, so it hands uv the same preferences: the name and
version of each package of the lock it is about to replace, written where uv's output file goes. Only
names and versions are copied, each checked, into a file sparkenv writes itself: a damaged, hand-edited
or foreign lock costs the preferences (uv then resolves afresh, as for a first lock), never the lock, and
nothing else of the old file reaches uv.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from sparkenv.core.errors import SparkenvError

_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")  # a normalised name, as sparkenv's locks write them
_PAIR = re.compile(r'^\[\[packages\]\]\s*\nname = "([^"\n]*)"\s*\nversion = "([^"\n]*)"', re.MULTILINE)
_LIMIT = 16 << 20  # a lock larger than this is not one sparkenv wrote: no preferences


@dataclass(frozen=True)
class Upgrade:
    """`--upgrade`: resolve afresh; `--upgrade-package NAME`: these may move, the others are kept."""

    all: bool = False
    packages: tuple[str, ...] = ()

    @classmethod
    def of(cls, upgrade: bool, packages: list[str] | None) -> Upgrade:
        from sparkenv.core.names import canonical

        names = []
        for name in packages or []:
            key = canonical(name.strip())
            if not _NAME.match(key):
                raise SparkenvError(f"--upgrade-package {name!r}: not a package name")
            names.append(key)
        return cls(upgrade, tuple(dict.fromkeys(names)))


def kept(previous: Path) -> dict[str, str]:
    """Name -> version of each package of a lock; empty when there is none or it cannot be read."""
    try:
        if previous.stat().st_size > _LIMIT:
            return {}
        text = previous.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    # the layout sparkenv's writer (and uv's) gives each package: read by pattern, faster than a TOML
    # parse before uv can start (benchmarks/lock_spawn.py); any other layout is parsed whole
    pairs = _PAIR.findall(text) or _parsed_pairs(text)
    out: dict[str, str] = {}
    for name, version in pairs:
        if isinstance(name, str) and isinstance(version, str) and _NAME.match(name):
            with contextlib.suppress(InvalidVersion):
                out[name] = str(Version(version))
    return out


def _parsed_pairs(text: str) -> list[tuple[object, object]]:
    from sparkenv.core.datafiles import parse_toml

    try:
        packages = parse_toml(text).get("packages")
    except (ValueError, RecursionError):
        return []
    return (
        [(p.get("name"), p.get("version")) for p in packages if isinstance(p, dict)]
        if isinstance(packages, list)
        else []
    )


def text(previous: Path | None, upgrade: Upgrade) -> str | None:
    """uv's preferences as the text of the output file uv is about to write: the packages of the
    `previous` lock; None under --upgrade, or when there is no lock or it names none."""
    if previous is None or upgrade.all:
        return None
    versions = kept(previous)
    if not versions:
        return None
    # the subset of PEP 751 uv reads preferences from: names and versions, nothing else of the old lock
    lines = ['lock-version = "1.0"', 'created-by = "sparkenv"', ""]
    for name, version in sorted(versions.items()):
        lines += ["[[packages]]", f'name = "{name}"', f'version = "{version}"', ""]
    return "\n".join(lines)


def seed(previous: Path | None, out: Path, upgrade: Upgrade) -> int:
    """Write uv's preferences (`text`) to `out`, the output file uv is about to write. Returns how many
    packages it names."""
    body = text(previous, upgrade)
    if body is None:
        return 0
    out.write_text(body, encoding="utf-8")
    return body.count("[[packages]]")


KEEP = Upgrade()  # the default: every version of the lock replaced is kept where the inputs allow
