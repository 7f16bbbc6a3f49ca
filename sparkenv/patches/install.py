"""Install and remove the .pth activation of the SDPA override in a site-packages folder.

Two files go into the folder: `_sparkenv_sdpa.py` (a copy of sparkenv/patches/sdpa.py, standard library
only, so the environment does not need sparkenv) and `sparkenv-sdpa.pth`, one `import` line that calls
its `_boot()` inside a try: whatever goes wrong, interpreter start-up goes on (a one-line warning on
stderr only when SPARKENV_DEBUG is set). `_boot()` puts a lazy import hook in place and imports nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sparkenv.core import children, outputs, safe_read
from sparkenv.core.errors import SparkenvError
from sparkenv.knowledge import packages

SOURCE = Path(__file__).with_name("sdpa.py")


def pth_name() -> str:
    return packages().sdpa_override_pth


def hook_module() -> str:
    return packages().sdpa_hook_module


def pth_line(module: str | None = None) -> str:
    """The .pth line. site.py executes lines that start with "import"; everything else is in exec()
    so that the try/except holds, and no exception (not even a broken copy) reaches site.py."""
    module = module or hook_module()
    code = (
        "try:\n"
        f" import {module}\n"
        f" {module}._boot()\n"
        "except Exception as e:\n"
        " import os\n"
        " if os.environ.get('SPARKENV_DEBUG'):\n"
        f"  sys.stderr.write('{pth_name()}: SDPA override not loaded: %r\\n' % (e,))\n"
    )
    return f"import sys; exec({code!r})\n"


@dataclass(frozen=True)
class Installed:
    site: Path
    pth: Path
    module: Path

    @property
    def present(self) -> bool:
        return self.pth.is_file()

    @property
    def current(self) -> bool:
        """The installed copy is this sparkenv's sdpa.py (an older copy keeps working, but not improving)."""

        try:
            # through safe_read: a module that is a FIFO or /dev/zero is not current, and never a hang
            return safe_read.read_bytes(self.module, what="the SDPA override module", limit=1 << 20) == (
                SOURCE.read_bytes()
            )
        except safe_read.UnreadableFile:
            return False


def files(site: Path) -> Installed:
    return Installed(site, site / pth_name(), site / f"{hook_module()}.py")


def install(site: Path) -> Installed:
    """Both files or neither (core.outputs: both paths checked, both written to temporaries, then moved
    in): the module first, then the .pth, so a .pth never names a missing module."""

    where = files(site)
    if not site.is_dir():
        raise SparkenvError(f"{site}: not a folder")
    outputs.write_all([(where.module, SOURCE.read_bytes()), (where.pth, pth_line().encode())])
    return where


def uninstall(site: Path) -> list[Path]:
    """Remove the .pth first (it stops running at once), then the module and its cached bytecode."""
    where = files(site)
    removed: list[Path] = []
    cache = site / "__pycache__"
    compiled = sorted(cache.glob(f"{hook_module()}.*.pyc")) if cache.is_dir() else []
    for path in (where.pth, where.module, *compiled):
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise SparkenvError(f"{path}: cannot remove: {exc.strerror}") from None
        removed.append(path)
    return removed


def verify(interpreter: Path, site: Path, timeout: float = 60.0) -> tuple[bool, str]:
    """Start the interpreter once, without SPARKENV_SDPA, and read the override's status from inside:
    proof that site.py runs the .pth there. Returns (ok, one-line reason)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPARKENV_SDPA", "PYTHONNOUSERSITE")}
    code = (
        "import json, sys\n"
        "finder = next((f for f in sys.meta_path if getattr(f, '_sparkenv_sdpa', None)), None)\n"
        "print(json.dumps({'hook': finder is not None, 'source': getattr(finder, 'source', None), "
        "'origin': getattr(finder, 'origin', None), "
        "'heavy': sorted(m for m in ('torch', 'transformers', 'unsloth') if m in sys.modules)}))\n"
    )

    try:
        # its own session, killed with everything it started when it overruns (sparkenv/core/children.py)
        proc = children.spawn([str(interpreter), "-c", code], env, text=True)
    except OSError as exc:
        return False, f"could not run {interpreter}: {exc.strerror or exc}"
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"{interpreter} did not start within {timeout:g} s: stopped it and what it started"
    finally:
        children.stop(proc, reap_s=1.0)
    if proc.returncode != 0:
        last = (stderr.strip().splitlines() or ["no output"])[-1]
        return False, f"{interpreter} exited {proc.returncode}: {last}"
    try:
        seen = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return False, f"{interpreter} printed no status"
    if not seen.get("hook"):
        return False, f"{interpreter} does not run {site / pth_name()} (is {site} one of its site folders?)"
    if seen.get("heavy"):
        return False, f"the hook imported {', '.join(seen['heavy'])} at start-up"
    if stderr.strip():
        return (
            True,
            f"{interpreter} loads the hook at start-up, but printed: {stderr.strip().splitlines()[-1]}",
        )
    return True, f"a fresh {interpreter} loads the hook at start-up (from {seen.get('origin')})"
