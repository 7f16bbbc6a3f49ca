"""The CUDA 13 counterpart of a package bound to another CUDA major, read from one data file
(data/cuda13_counterparts.toml, dated, each family with its public source): every fix text that names
what to install instead comes from `fix` here, so no stage invents a name by swapping a suffix (the
CUDA 13 toolkit libraries drop it at their own version numbers, separately released libraries keep a
-cu13 name, frameworks spell the major their own way, and some have no CUDA 13 build at all)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from sparkenv.knowledge import cuda13_counterparts

if TYPE_CHECKING:
    from sparkenv.knowledge.records.cuda13_counterparts import Family


@functools.cache
def _by_name() -> dict[str, Family]:
    return {name: f for f in cuda13_counterparts().families for name in f.names}


def family(key: str) -> Family | None:
    """The family a normalized distribution name belongs to, when the data lists it."""
    return _by_name().get(key)


def requirement(fam: Family) -> str:
    """What to write instead: the counterpart and the versions that carry CUDA 13 ("" when none)."""
    return f"{fam.counterpart}{fam.versions}" if fam.counterpart else ""


def fix(key: str, target: int, ngc: str = "") -> str:
    """The fix for `key`, bound to another CUDA major: its counterpart from the data, or, where the data
    knows none, that no CUDA 13 build of it is known and the nearest honest way out. `ngc`: the clause
    that offers the NGC image (" or use the NGC image"), "" on an NGC base."""
    fam = family(key)
    if fam is not None and fam.counterpart:
        also = f" ({fam.also})" if fam.also else ""
        return f"replace it with {requirement(fam)}{also}{',' if ngc else ''}{ngc}"
    if fam is not None:
        return f"no known CUDA {target} build of {key}: {fam.advice}{';' if ngc else ''}{ngc}"
    return (
        f"no known CUDA {target} build of {key} (sparkenv's data names none): use a CUDA {target} build of "
        f"it if its publisher has one, build it against CUDA {target} on the Spark{ngc}"
    )
