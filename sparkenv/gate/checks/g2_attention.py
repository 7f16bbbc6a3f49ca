"""G2 live: flash-attn works on the GPU; with Unsloth and SDPA wanted, the SDPA override is active."""

from __future__ import annotations

from sparkenv.gate.view import GateFacts
from sparkenv.report import Finding, Status


def check(f: GateFacts) -> list[Finding]:
    flash = f.torch_stages.get("flash")
    out = [_flash_attn(flash, "flash-attn" in f.dists, f.deep)]
    if "unsloth" in f.dists and flash and flash.get("works"):
        out.append(_unsloth(f))
    return out


def _flash_attn(flash: dict | None, installed: bool, deep: bool = True) -> Finding:
    def finding(status: Status, summary: str, fix: str | None = None) -> Finding:
        return Finding("G2", status, summary, "flash-attn", (), fix)

    drop = "pip uninstall flash-attn and use SDPA, or use the NGC image's flash-attn"
    if not installed and (flash is None or not flash.get("importable")):
        return finding(Status.PASS, "flash-attn is not installed: attention uses SDPA")
    if flash is None and not deep:
        return finding(
            Status.INFO,
            "flash-attn is installed; the default gate does not call it (--deep runs a flash-attn call on "
            "the GPU; sparkenv audit reads where it came from)",
        )
    if flash is None:
        return finding(Status.SKIP, "flash-attn is installed but was not tried (no GPU or no torch)")
    if not flash.get("importable"):
        return finding(
            Status.FAIL, f"flash-attn is installed but does not import: {flash.get('error')}", drop
        )
    if not flash.get("works"):
        return finding(
            Status.FAIL,
            f"flash-attn {flash.get('version')} imports but fails on the GPU: {flash.get('error')}",
            drop,
        )
    return finding(Status.PASS, f"flash-attn {flash.get('version')} runs on the GPU")


_SHOWN = ("installed", "installed_by", "mode", "dispatch", "leaks", "env", "errors")
_OFF = ("0", "off", "false", "no")


def _unsloth(f: GateFacts) -> Finding:
    override = f.torch_stages.get("sdpa_override") or {}
    env = f.env.get("SPARKENV_SDPA", "").strip().lower()
    wanted = env not in _OFF and (env != "" or bool(override.get("installed")))
    who = f"unsloth {f.dists['unsloth']}"
    evidence = tuple(f"{k}: {override[k]}" for k in _SHOWN if override.get(k) not in (None, [], ""))
    dispatch = override.get("dispatch")
    if "unsloth_import_error" in f.torch_stages:
        evidence += (f"import unsloth failed: {f.torch_stages['unsloth_import_error']['error']}",)
    if override.get("active"):
        seen = (
            f"; Unsloth's dispatch picks {dispatch}"
            if dispatch
            else " (Unsloth not imported: --import-unsloth checks its dispatch)"
        )
        return Finding("G2", Status.PASS, f"{who}: the SDPA override is active{seen}", "unsloth", evidence)
    if wanted:
        why = f"Unsloth's dispatch picks {dispatch}" if dispatch else "Unsloth will train with flash-attn"
        return Finding(
            "G2",
            Status.FAIL,
            f"{who}: SDPA is wanted but the override is not active: {why}",
            "unsloth",
            evidence,
            "install sparkenv's SDPA override (sparkenv patch sdpa --install); keep SPARKENV_SDPA unset or 1",
        )
    off = " (SPARKENV_SDPA switches the override off)" if env in _OFF and env else ""
    return Finding(
        "G2",
        Status.INFO,
        f'{who} will use flash-attn (it overrides attn_implementation="sdpa"){off}; for SDPA install the '
        "override (sparkenv patch sdpa --install)",
        "unsloth",
        evidence,
    )
