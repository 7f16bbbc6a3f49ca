"""The wheel tags CPython on a Linux target accepts, best first, and the wheel an installer takes among
several: the ranking of packaging.tags, which pip and uv install by (the interpreter's own ABI before
abi3 before `py3-none-any`, the newest manylinux level first). A project that ships a compiled wheel and
a pure-Python one (tomli, charset-normalizer) has two that fit; the compiled one is taken."""

from __future__ import annotations

from collections.abc import Iterable

from packaging import tags
from packaging.utils import InvalidWheelFilename, parse_wheel_filename


def accepted(python: str, machine: str, glibc_minor: int) -> list[tags.Tag]:
    """Every tag CPython `python` ("3.12") on `machine` with glibc 2.`glibc_minor` installs, best first."""
    major, minor = (int(x) for x in python.split(".")[:2])
    plats = [f"manylinux_2_{m}_{machine}" for m in range(glibc_minor, 16, -1)]
    plats += [f"manylinux2014_{machine}"]
    if machine == "x86_64":
        plats += ["manylinux2010_x86_64", "manylinux1_x86_64"]
    return [
        *tags.cpython_tags((major, minor), platforms=plats),
        *tags.compatible_tags((major, minor), platforms=plats),
    ]


def best(filenames: Iterable[str], ranked: list[tags.Tag]) -> str | None:
    """The wheel among `filenames` whose best tag ranks first in `ranked` (accepted()); None when none fits
    (or none is a wheel's name)."""
    rank = {t: i for i, t in enumerate(ranked)}
    scored = []
    for name in filenames:
        try:
            wheel_tags = parse_wheel_filename(name)[3]
        except InvalidWheelFilename:
            continue
        fits = [rank[t] for t in wheel_tags if t in rank]
        if fits:
            scored.append((min(fits), name))
    return min(scored)[1] if scored else None
