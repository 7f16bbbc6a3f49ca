"""How a built image starts `sparkenv gate` (sparkenv/image/sparkenv.sh): `python3 -I -S`, then `prepare()`
here, then sparkenv.cli.entry's main as every start.

Without -S the interpreter's `site` runs, before any gate code, the code lines of every .pth file in the
base's site-packages and its sitecustomize (numba-cuda's redirector, coverage's, …): on a real torch venv
that is most of the interpreter's start (benchmarks/gate_start.py). The gate judges the workload's
interpreter through sys.path (probes.installed_dists and static_torch read the folders on it), and its
forked probes and check workers inherit it, so sys.path must still be what `site` makes it: `complete_path`
has the interpreter's own site.py make it — a distribution's patches (Debian's dist-packages), a venv's
pyvenv.cfg, duplicates, the path lines of .pth files — with the code lines and sitecustomize left out. Same
path, same findings (tests/gate/test_gate_launcher.py compares both starts)."""

from __future__ import annotations

import sys


def complete_path() -> None:
    """Under -S: sys.path (and sys.prefix in a venv) as site.main() makes them, running no .pth code
    line and no sitecustomize or usercustomize. Nothing to do where site already ran."""
    if not sys.flags.no_site:
        return
    import site  # under -S importing it changes nothing: main() is what site would have run

    kept = {name: getattr(site, name) for name in ("execsitecustomize", "execusercustomize")}
    # addpackage runs a .pth line that starts with "import" through the global name `exec`: the name
    # found first in site's own namespace, so this one is called instead, and runs nothing
    site.exec = _code_line  # type: ignore[attr-defined]
    site.execsitecustomize = site.execusercustomize = _nothing
    try:
        site.main()
    finally:
        del site.exec  # type: ignore[attr-defined]
        for name, fn in kept.items():
            setattr(site, name, fn)


def _code_line(_line: str) -> None:
    """A .pth file's code line (`import …`): not run. What such lines do (install import hooks,
    patch modules: numba-cuda's redirector, setuptools' distutils shim, an SDPA override) concerns
    the workload's imports; the gate imports none of the workload's packages."""


def _nothing() -> None:
    """sitecustomize and usercustomize: the workload's, not the gate's (usercustomize is off under -I
    anyway)."""


def prepare() -> None:
    """Before anything else is imported: no cyclic garbage collection, then the path. The gate is a
    short-lived process that execs the workload (or exits) within its deadline, and its children
    (core/pool.py) leave once they have answered: what the collector frees there is never needed,
    while its passes cost each of them time in every import (each pass walks the objects the gate had
    when it forked, writing to the pages they share with it). The exec starts the workload's own
    interpreter, with its collector on; the watcher (--watch) is a new interpreter too."""
    import gc

    gc.disable()
    complete_path()
