"""G9 at Stage.LIVE: the running machine (sparkenv gate): container markers, NGC torch replaced,
TRITON_PTXAS_PATH next to Triton; the same findings as the audit's where both see the same fact."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.cuda.rules import ngc_release
from sparkenv.facts import ngc
from sparkenv.rules import data_age
from sparkenv.rules.g9_installed import NO_CONTAINER_FIX, ngc_torch

if TYPE_CHECKING:
    from sparkenv.facts.live import GateFacts

_finding = partial(Finding, GotchaId.G9)  # every finding of this module is G9's


def live(f: GateFacts) -> list[Finding]:
    out = []
    err = f.error_finding(GotchaId.G9, "container", "container")
    if err:
        out.append(err)
    else:
        markers = (f.section("container") or {}).get("markers") or []
        if markers:
            out.append(
                _finding(
                    status=Status.PASS,
                    summary=f"inside a container ({'; '.join(markers)})",
                    subject="container",
                    evidence=tuple(markers),
                )
            )
        else:
            out.append(
                _finding(
                    status=Status.WARN,
                    summary="no container marker found (unknown, not necessarily bare host): "
                    "a bare pip environment drifts",
                    subject="container",
                    fix=NO_CONTAINER_FIX,
                )
            )
    image = ngc.from_snapshot(f.env, (f.section("container") or {}).get("ngc"))
    torch_version = (f.torch or {}).get("version") or f.dists.get("torch")
    if image.detected and torch_version:
        out.append(ngc_torch(image, str(torch_version)))
    release = image.release or ngc_release(str(torch_version or ""))
    out += data_age.base(GotchaId.G9, release, "this machine's image")
    # Triton's ptxas is G7's to judge (g7.judge_triton_ptxas) wherever its facts were read; only
    # without them is the unset variable worth a line here: one judgement per fact.
    judged_by_g7 = bool((f.section("kernel_coverage") or {}).get("triton"))
    if any(k in f.dists for k in ("triton", "pytorch-triton")) and not judged_by_g7:
        ptxas = f.env.get("TRITON_PTXAS_PATH")
        if ptxas:
            out.append(
                _finding(
                    status=Status.PASS,
                    summary=f"TRITON_PTXAS_PATH={ptxas}",
                    subject="TRITON_PTXAS_PATH",
                )
            )
        else:
            status = Status.WARN if f.is_gb10 else Status.INFO
            out.append(
                _finding(
                    status=status,
                    summary="Triton is installed and TRITON_PTXAS_PATH is unset: its bundled ptxas "
                    "may predate CUDA 13 and reject sm_121a",
                    subject="TRITON_PTXAS_PATH",
                    fix="export TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas (NGC images set it)",
                )
            )
    return out
