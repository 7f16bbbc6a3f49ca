"""Newer than the data knows: the one decision every stage asks before it judges an NGC release, a CUDA
release, a driver or a DGX OS release against sparkenv's dated tables.

A value past the newest the data holds is never judged as if it were that newest one without saying so:
`newer_than_known` names what is unknown, the file and its review date, and how to refresh it; the rules
turn that into an INFO (rules/data_age.py), and the driver judgement (rules/g1_driver.py) into its text.
Values at or below the newest known are None here, even where a row is missing (12.7 was never released):
the table's own lookup judges those.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from sparkenv.knowledge import cuda, drivers, hosts

Kind = Literal["ngc", "cuda", "driver", "dgx_os"]
_NUMBERS = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")


class Unknown(NamedTuple):
    kind: Kind
    value: str  # as the caller read it ("26.10", "13.5", "620.10")
    newest: str  # the newest the data knows of that kind
    file: str  # the data file that would hold it
    reviewed: str  # that file's review date
    refresh: str  # how to bring the data up to date

    def summary(self) -> str:
        what = {
            "ngc": "NGC PyTorch release",
            "cuda": "CUDA release",
            "driver": "driver",
            "dgx_os": "DGX OS release",
        }[self.kind]
        return (
            f"{what} {self.value} is newer than any sparkenv knows (newest {self.newest}; {self.file}, "
            f"reviewed {self.reviewed}): {_UNKNOWN[self.kind]} unknown to sparkenv"
        )


_UNKNOWN = {
    "ngc": "its CUDA, torch and the versions it pins are",
    "cuda": "the driver it needs is",
    "driver": "the CUDA releases it adds are",
    "dgx_os": "the kernel and driver it ships are",
}


def _key(text: str) -> tuple[int, ...] | None:
    m = _NUMBERS.match(text or "")
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def _show(key: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in key)


def newest_ngc() -> str:

    return max(cuda().ngc, key=lambda r: _key(r) or ())


def newest_cuda(major: int | None = None) -> str:
    """The newest CUDA release in data/drivers.toml (of `major`, when given)."""

    keys = [k for k in (_key(r) for r in drivers().toolkit) if k and (major is None or k[0] == major)]
    return _show(max(keys)) if keys else ""


def newest_driver() -> str:
    """The highest minimum driver in data/drivers.toml: the newest driver branch the table knows."""

    return max(drivers().toolkit.values(), key=lambda v: _key(v) or ())


def newest_dgx_os() -> str:
    """The newest DGX OS release in data/hosts.toml [[dgx_os]]."""

    return max((r.version for r in hosts().dgx_os), key=lambda v: _key(v) or (), default="")


def newer_than_known(kind: Kind, value: str | None) -> Unknown | None:
    """`value` past the newest of its kind in the data, with what to do about it; None when it is known,
    not newer, or not a version at all (the caller's own parsing says that)."""
    key = _key(value or "")
    if key is None:
        return None
    if kind == "ngc":
        newest = newest_ngc()
        if key[:2] <= (_key(newest) or ()):
            return None
        rel = f"{key[0]:02d}.{key[1]:02d}" if len(key) > 1 else str(value)
        return Unknown(
            kind,
            rel,
            newest,
            "sparkenv/data/cuda.toml [ngc] and sparkenv/data/profiles/",
            cuda().reviewed,
            f"sparkenv profiles new ngc-{rel} --from-image nvcr.io/nvidia/pytorch:{rel}-py3, then add "
            f'"{rel}" to [ngc] in sparkenv/data/cuda.toml from its release notes ({cuda().ngc_source})',
        )
    if kind == "dgx_os":
        newest = newest_dgx_os()
        if not newest or key <= (_key(newest) or ()):
            return None
        file = "sparkenv/data/hosts.toml [[dgx_os]]"
        source = next(r.source for r in hosts().dgx_os if r.version == newest)
        refresh = (
            f"add a [[dgx_os]] row for {_show(key)} to {file} from NVIDIA's DGX OS release notes ({source})"
        )
        return Unknown(kind, _show(key), newest, file, hosts().reviewed, refresh)

    data = drivers()
    file = "sparkenv/data/drivers.toml"
    refresh = f"refresh {file} [toolkit] from NVIDIA's table ({data.source})"
    if kind == "cuda":
        newest = newest_cuda(key[0])
        if not newest:  # a major the table does not hold: past it when above every major it holds
            overall = newest_cuda()
            if key[0] <= (_key(overall) or (0,))[0]:
                return None
            return Unknown(
                kind, _show(key[:3]), overall, "sparkenv/data/drivers.toml", data.reviewed, refresh
            )
        top = _key(newest) or ()
        # "13.4" (torch.version.cuda: no update) is within 13.4.x, "13.5" past 13.4.1; CUDA_VERSION's
        # fourth part (13.0.2.006) is a build number
        past = key[:2] > top[:2] if len(key) < 3 else key[:3] > top
        if not past:
            return None
        return Unknown(kind, _show(key[:3]), newest, file, data.reviewed, refresh)
    newest = newest_driver()
    if key[0] <= (_key(newest) or (0,))[0]:
        return None  # a newer build of a known branch adds no CUDA release
    return Unknown(kind, value or "", newest, file, data.reviewed, refresh)
