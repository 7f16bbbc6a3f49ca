"""G9 live: container or not, NGC torch replaced, Triton's ptxas."""

from __future__ import annotations

from sparkenv.cuda import rules
from sparkenv.gate.view import GateFacts
from sparkenv.report import Finding, Status


def check(f: GateFacts) -> list[Finding]:
    out = []
    err = f.error_finding("G9", "container", "container")
    if err:
        out.append(err)
    else:
        markers = (f.section("container") or {}).get("markers") or []
        if markers:
            out.append(
                Finding(
                    "G9",
                    Status.PASS,
                    f"inside a container ({'; '.join(markers)})",
                    "container",
                    tuple(markers),
                )
            )
        else:
            out.append(
                Finding(
                    "G9",
                    Status.WARN,
                    "no container marker found (unknown, not necessarily bare host): "
                    "a bare pip environment drifts",
                    "container",
                    (),
                    "run in an NGC PyTorch container (sparkenv build makes one)",
                )
            )
    ngc = f.env.get("NVIDIA_PYTORCH_VERSION")
    torch_version = (f.torch or {}).get("version") or f.dists.get("torch")
    if ngc and torch_version:
        if rules.ngc_release(str(torch_version)):
            out.append(Finding("G9", Status.PASS, f"torch {torch_version} is the NGC {ngc} build", "torch"))
        else:
            out.append(
                Finding(
                    "G9",
                    Status.FAIL,
                    f"NGC image {ngc} but torch {torch_version} is not NGC's build: a "
                    "pip install replaced it",
                    "torch",
                    (),
                    "rebuild from the image; install other packages with --no-deps",
                )
            )
    if any(k in f.dists for k in ("triton", "pytorch-triton")):
        ptxas = f.env.get("TRITON_PTXAS_PATH")
        if ptxas:
            out.append(Finding("G9", Status.PASS, f"TRITON_PTXAS_PATH={ptxas}", "TRITON_PTXAS_PATH"))
        else:
            status = Status.WARN if f.is_gb10 else Status.INFO
            out.append(
                Finding(
                    "G9",
                    status,
                    "Triton is installed and TRITON_PTXAS_PATH is unset: its bundled ptxas "
                    "may predate CUDA 13 and reject sm_121a",
                    "TRITON_PTXAS_PATH",
                    (),
                    "export TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas (NGC images set it)",
                )
            )
    return out
