"""G2 live: flash-attn works on the GPU; with Unsloth and SDPA wanted, the SDPA override is active."""

from __future__ import annotations

from sparkenv.gate.view import GateFacts
from sparkenv.report import Finding, Status


def check(f: GateFacts) -> list[Finding]:
    out: list[Finding] = []
    flash = f.torch_stages.get("flash")
    installed = "flash-attn" in f.dists
    if flash is None:
        if installed:
            out.append(
                Finding(
                    "G2",
                    Status.SKIP,
                    "flash-attn is installed but was not tried (no GPU or no torch)",
                    "flash-attn",
                )
            )
        else:
            out.append(
                Finding("G2", Status.PASS, "flash-attn is not installed: attention uses SDPA", "flash-attn")
            )
    elif not flash.get("importable"):
        if installed:
            out.append(
                Finding(
                    "G2",
                    Status.FAIL,
                    f"flash-attn is installed but does not import: {flash.get('error')}",
                    "flash-attn",
                    (),
                    "pip uninstall flash-attn (SDPA works), or use the NGC image's build",
                )
            )
        else:
            out.append(
                Finding("G2", Status.PASS, "flash-attn is not installed: attention uses SDPA", "flash-attn")
            )
    elif not flash.get("works"):
        out.append(
            Finding(
                "G2",
                Status.FAIL,
                f"flash-attn {flash.get('version')} imports but fails on the GPU: {flash.get('error')}",
                "flash-attn",
                (),
                "pip uninstall flash-attn and use SDPA, or use the NGC image's flash-attn",
            )
        )
    else:
        out.append(
            Finding("G2", Status.PASS, f"flash-attn {flash.get('version')} runs on the GPU", "flash-attn")
        )
    if "unsloth" in f.dists and flash and flash.get("works"):
        out.append(_unsloth(f))
    return out


def _unsloth(f: GateFacts) -> Finding:
    override = f.torch_stages.get("sdpa_override") or {}
    wanted = f.env.get("SPARKENV_SDPA", "") not in ("", "0") or override.get("installed")
    active = override.get("active")
    who = f"unsloth {f.dists['unsloth']}"
    if active:
        return Finding(
            "G2",
            Status.PASS,
            f"{who}: the SDPA override is active",
            "unsloth",
            tuple(f"{k}: {v}" for k, v in override.items()),
        )
    if wanted:
        return Finding(
            "G2",
            Status.FAIL,
            f"{who}: SDPA is wanted but the override is not active: Unsloth will train with flash-attn",
            "unsloth",
            tuple(f"{k}: {v}" for k, v in override.items()),
            "install sparkenv's SDPA override (sparkenv patch sdpa --install) and keep SPARKENV_SDPA "
            "unset or 1",
        )
    return Finding(
        "G2",
        Status.INFO,
        f'{who} will use flash-attn (it overrides attn_implementation="sdpa"); '
        "set SPARKENV_SDPA=1 with the override installed if you want SDPA",
        "unsloth",
    )
