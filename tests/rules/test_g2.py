"""rules/g2.py, every stage both ways: flash-attn's hour-long build, builds that do not fit, Unsloth
dropping attn_implementation="sdpa" without the SDPA override."""

from __future__ import annotations

import pytest
import stage_facts as sf
from rule_table import Row, check, ids

from sparkenv.core.report import Status
from sparkenv.knowledge import packages

PASS, WARN, FAIL, INFO = Status.PASS, Status.WARN, Status.FAIL, Status.INFO
DROP = "pip uninstall flash-attn and use SDPA"
PATCH = "sparkenv patch sdpa --install"
NGC_FA = "2.7.4.post1+25.11"


def _env(ctx, fa=None, fa_so=("libcudart.so.13",), unsloth=False, override=False):
    """A real environment: flash-attn `fa` with one compiled extension linking `fa_so` (None: no extension),
    Unsloth, and the SDPA override's .pth."""
    env = ctx.env()
    if fa:
        so = {"flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so": ctx.elves.linked(fa_so)} if fa_so else None
        env.add("flash-attn", fa, files=so)
    if unsloth:
        env.add("unsloth", "2026.7.2")
    if override:
        (env.site / packages().sdpa_override_pth).write_text("import _sparkenv_sdpa\n")
    return sf.installed(ctx)


def _live_unsloth(override: dict, sdpa: str | None = None, works: bool = True):
    env = {"SPARKENV_SDPA": sdpa} if sdpa is not None else {}
    flash = {"importable": True, "works": works, "version": "2.7.4.post1"}
    return sf.live_raw(
        "h200-live",
        torch__stages__flash=flash,
        torch__stages__sdpa_override=override,
        dists={"torch": "2.9.1+cu130", "flash-attn": NGC_FA, "unsloth": "2026.7.2"},
        env=env,
    )


ROWS = [
    # --- Stage.DECLARED ----------------------------------------------------------------------------
    Row(
        "g2.declared",
        "the base's flash-attn",
        lambda c: sf.declared(c, "flash-attn\n", "ngc-25.11"),
        "flash-attn",
        PASS,
        None,
        "provided by the base",
    ),
    Row(
        "g2.declared",
        "another flash-attn than the base's",
        lambda c: sf.declared(c, "flash-attn==2.8.3\n", "ngc-25.11"),
        "flash-attn",
        FAIL,
        "drop the requirement and use the base's flash-attn, or require flash-attn==2.7.4.post1+25.11",
    ),
    Row(
        "g2.declared",
        "no aarch64 wheel upstream",
        lambda c: sf.declared(c, "flash-attn\n"),
        "flash-attn",
        FAIL,
        "use a profile whose base provides it (--profile",
        "1–1.5 h",
    ),
    Row(
        "g2.declared",
        "wheels for the target's CPU",
        lambda c: sf.declared(c, "xformers\n", platform="linux/x86_64"),
        "xformers",
        PASS,
        None,
        "has upstream wheels for x86_64",
    ),
    # --- Stage.RESOLVED ----------------------------------------------------------------------------
    Row(
        "g2.resolved",
        "a wheel fits",
        lambda c: sf.resolved(sf.locked("flash-attn", "2.8.3")),
        "flash-attn",
        None,
    ),
    Row(
        "g2.resolved",
        "flash-attn only as an sdist",
        lambda c: sf.resolved(sf.locked("flash-attn", "2.8.3", sdist_only=True)),
        "flash-attn",
        FAIL,
        "use a profile whose base provides it (--profile",
        "compiles CUDA/C++ against torch",
    ),
    Row(
        "g2.resolved",
        "another package only as an sdist",
        lambda c: sf.resolved(sf.locked("pyfoo", "1.0", sdist_only=True)),
        "pyfoo",
        WARN,
        "prefer a version with a wheel for the target",
    ),
    # --- Stage.INSTALLED ---------------------------------------------------------------------------
    Row("g2.installed", "not installed", lambda c: _env(c), "flash-attn", INFO, None, "attention uses SDPA"),
    Row(
        "g2.installed",
        "NGC build that fits",
        lambda c: _env(c, NGC_FA),
        "flash-attn",
        PASS,
        None,
        "origin: NGC build 25.11",
    ),
    Row(
        "g2.installed",
        "no compiled extension",
        lambda c: _env(c, NGC_FA, fa_so=None),
        "flash-attn",
        FAIL,
        DROP,
        "the build did not finish",
    ),
    Row(
        "g2.installed",
        "a CUDA 12 GitHub wheel",
        lambda c: _env(c, "2.8.3+cu12torch2.9cxx11abiTRUE", fa_so=("libcudart.so.12",)),
        "flash-attn",
        FAIL,
        DROP,
        "built for CUDA 12",
    ),
    Row(
        "g2.installed",
        "Unsloth without the override",
        lambda c: _env(c, NGC_FA, unsloth=True),
        "unsloth",
        WARN,
        PATCH,
        'drops attn_implementation="sdpa"',
    ),
    Row(
        "g2.installed",
        "Unsloth with the override",
        lambda c: _env(c, NGC_FA, unsloth=True, override=True),
        "unsloth",
        PASS,
        None,
        "the SDPA override is installed",
    ),
    # --- Stage.LIVE --------------------------------------------------------------------------------
    Row(
        "g2.live",
        "flash-attn not installed",
        lambda c: sf.live_raw("h200-static"),
        "flash-attn",
        PASS,
        None,
        "attention uses SDPA",
    ),
    Row(
        "g2.live",
        "flash-attn runs on the GPU",
        lambda c: _live_unsloth({"active": True}),
        "flash-attn",
        PASS,
        None,
        "runs on the GPU",
    ),
    Row(
        "g2.live",
        "flash-attn fails on the GPU",
        lambda c: _live_unsloth({}, works=False),
        "flash-attn",
        FAIL,
        DROP,
        "fails on the GPU",
    ),
    Row(
        "g2.live",
        "override wanted, not active",
        lambda c: _live_unsloth({"installed": True, "active": False, "dispatch": "flash_dense"}),
        "unsloth",
        FAIL,
        PATCH,
        "SDPA is wanted but the override is not active",
    ),
    Row(
        "g2.live",
        "override active",
        lambda c: _live_unsloth({"installed": True, "active": True, "dispatch": "sdpa"}),
        "unsloth",
        PASS,
        None,
        "the SDPA override is active",
    ),
    Row(
        "g2.live",
        "SPARKENV_SDPA=disable",
        lambda c: _live_unsloth({"installed": True, "active": False}, "disable"),
        "unsloth",
        INFO,
        None,
        "SPARKENV_SDPA switches the override off",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g2(row, ctx):
    check(row, ctx)
