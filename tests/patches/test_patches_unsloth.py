"""The SDPA override against the REAL Unsloth source (unsloth and unsloth_zoo 2026.7.2 wheels from PyPI).

What runs for real here (CPU, no torch): unsloth/utils/__init__.py, unsloth/utils/packing.py and
unsloth/utils/attention_dispatch.py, imported through the normal import system, and an AST reading of
every module of both wheels. What is stubbed, and why: see tests/patches_real_unsloth.py (torch, the
`unsloth` and `unsloth.models` package __init__s, `unsloth.models._utils`, flash_attn, xformers: each
needs a GPU or is not installable on the CPU machine). The full `import unsloth` ran on a GPU machine:
benchmarks/patch_sdpa_gpu.py.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.network

VERSION = "2026.7.2"  # the known-good stack (shared/FACTS.md)
HERE = Path(__file__).parents[1]
CHILD = HERE / "patches_real_unsloth.py"


@pytest.fixture(scope="module")
def unsloth_src(request: pytest.FixtureRequest) -> Path:
    """The real wheels, downloaded once into pytest's cache; only the Python packages are extracted."""
    cache = Path(request.config.cache.mkdir(f"unsloth-wheels-{VERSION}"))
    wheels = {d: next(cache.glob(f"{d}-{VERSION}-*.whl"), None) for d in ("unsloth", "unsloth_zoo")}
    missing = [f"{d}=={VERSION}" for d, w in wheels.items() if w is None]
    if missing:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(cache), *missing],
            check=True,
            timeout=600,
        )
    src = cache / "src"
    if not (src / "unsloth" / "utils" / "attention_dispatch.py").is_file():
        for dist in ("unsloth", "unsloth_zoo"):
            with zipfile.ZipFile(next(cache.glob(f"{dist}-{VERSION}-*.whl"))) as z:
                z.extractall(src, [n for n in z.namelist() if n.startswith(f"{dist}/")])
    return src


def child(src: Path, patch: str, order: str) -> dict:
    proc = subprocess.run(
        [sys.executable, str(CHILD), str(src), patch, order], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_unpatched_real_dispatch_picks_flash_attn(unsloth_src: Path) -> None:
    """Baseline: with the flags Unsloth computes next to flash-attn, its real dispatch picks flash-attn."""
    got = child(unsloth_src, "none", "after")
    assert got["select"] == "flash_dense" and got["select_varlen"] == "flash_varlen"
    assert not got["status"]["active"]
    assert "unsloth.utils.attention_dispatch.HAS_FLASH_ATTENTION" in got["status"]["leaks"]


@pytest.mark.parametrize(
    "patch",
    [
        pytest.param(
            "one-flag",
            marks=pytest.mark.xfail(
                strict=True,
                reason="the widely shared patch sets unsloth.models._utils.HAS_FLASH_ATTENTION only; "
                "attention_dispatch keeps its own copy and still picks flash-attn",
            ),
        ),
        "force_sdpa",
    ],
)
def test_patch_after_import_unsloth_makes_dispatch_pick_sdpa(unsloth_src: Path, patch: str) -> None:
    """The realistic order (patch after `import unsloth`): FAILS with the one-flag patch, PASSES with
    force_sdpa(); the check is what the real select_attention_backend() returns and the flag it reads."""
    got = child(unsloth_src, patch, "after")
    assert got["dispatch_HAS_FLASH_ATTENTION"] is False
    assert got["select"] == "sdpa"
    assert got["select_varlen"] == "sdpa"


def test_one_flag_patch_changes_only_utils(unsloth_src: Path) -> None:
    got = child(unsloth_src, "one-flag", "after")
    assert got["utils_HAS_FLASH_ATTENTION"] is False
    assert got["dispatch_HAS_FLASH_ATTENTION"] is True  # the copy the dispatch reads
    assert got["select"] == "flash_dense"
    assert "unsloth.utils.attention_dispatch.HAS_FLASH_ATTENTION" in got["status"]["leaks"]


def test_force_sdpa_before_import_goes_through_the_import_hook(unsloth_src: Path) -> None:
    got = child(unsloth_src, "force_sdpa", "before")
    assert got["select"] == "sdpa" and got["dispatch_HAS_XFORMERS"] is False
    # patched before the dispatch's module code ran its `if HAS_FLASH_ATTENTION: from flash_attn import …`
    assert got["imported_flash_attn_func"] is False
    assert got["loader_restored"] == "SourceFileLoader"  # the hook's loader wrapper is gone afterwards
    st = got["status"]
    assert st["active"] and st["dispatch"] == "sdpa" and st["installed_by"] == "force_sdpa"
    assert "unsloth.utils.attention_dispatch.HAS_XFORMERS: True -> False" in st["changes"]
    assert not st["errors"]


def test_force_sdpa_after_import_reports_what_it_changed(unsloth_src: Path) -> None:
    got = child(unsloth_src, "force_sdpa", "after")
    changes = got["status"]["changes"]
    assert "unsloth.models._utils.HAS_FLASH_ATTENTION: True -> False" in changes
    assert "unsloth.utils.attention_dispatch.HAS_FLASH_ATTENTION: True -> False" in changes
    assert "unsloth.utils.attention_dispatch.HAS_FLASH_ATTENTION_SOFTCAPPING: True -> False" in changes
    assert got["message"].startswith("SDPA override active")


def test_xformers_mode_keeps_xformers(unsloth_src: Path) -> None:
    got = child(unsloth_src, "force_sdpa-xformers", "after")
    assert got["select"] == "xformers" and got["dispatch_HAS_FLASH_ATTENTION"] is False
    assert got["status"]["active"]


def _binds(tree: ast.Module, name: str, star_sources: set[str]) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, ast.ImportFrom):
            if any(a.name == name for a in node.names):
                return True
            if any(a.name == "*" for a in node.names) and (node.module or "").split(".")[-1] in star_sources:
                return True
    return False


def test_real_layout_every_copy_of_the_flag_is_in_an_unsloth_module(unsloth_src: Path) -> None:
    """FACTS.md G2 against the real source: the flag is bound in several modules (assigned in _utils,
    copied by name or star-import elsewhere), all named unsloth*, which is what force_sdpa() scans; and
    select_attention_backend() reads the module global, not an argument."""
    holders = {"_utils", "llama"}  # modules whose star-import hands HAS_FLASH_ATTENTION on
    binding = []
    for path in sorted(unsloth_src.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        if _binds(tree, "HAS_FLASH_ATTENTION", holders):
            binding.append(".".join(path.relative_to(unsloth_src).with_suffix("").parts))
    assert {
        "unsloth.models._utils",
        "unsloth.models.llama",
        "unsloth.models.loader",
        "unsloth.utils.attention_dispatch",
    } <= set(binding)
    assert all(m.startswith("unsloth") for m in binding)
    dispatch = ast.parse((unsloth_src / "unsloth/utils/attention_dispatch.py").read_text(encoding="utf-8"))
    select = next(
        n for n in dispatch.body if isinstance(n, ast.FunctionDef) and n.name == "select_attention_backend"
    )
    assert "HAS_FLASH_ATTENTION" not in {a.arg for a in select.args.args}
    reads = {n.id for n in ast.walk(select) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    assert {"HAS_FLASH_ATTENTION", "HAS_XFORMERS"} <= reads
