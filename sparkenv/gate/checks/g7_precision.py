"""G7 live: a GB10 (12, 1), a torch arch list that runs on it, and NVFP4 intent."""

from __future__ import annotations

from sparkenv import datafiles
from sparkenv.gate import parsers
from sparkenv.gate.view import GateFacts
from sparkenv.report import Finding, Status

FP4_WORDS = ("nvfp4", "modelopt_fp4", "fp4")


def check(f: GateFacts) -> list[Finding]:
    cap = f.capability
    if cap is None:
        return [
            Finding(
                "G7",
                Status.SKIP,
                "no GPU capability known (no GPU, or torch/nvidia-smi missing)",
                "capability",
            )
        ]
    if not f.is_gb10:
        return [Finding("G7", Status.SKIP, f"capability {cap} is not a GB10 (12, 1)", "capability")]
    out = []
    spec = datafiles.load("gate")["gb10"]
    arch = (f.device or {}).get("arch_list")
    if arch is None:
        out.append(
            Finding("G7", Status.PASS, f"capability {cap}: a GB10 (torch arch list not read)", "capability")
        )
    elif any(a in arch for a in spec["arch_ok"]):
        out.append(
            Finding(
                "G7",
                Status.PASS,
                f"capability {cap}: GB10; torch arch list {', '.join(arch)} runs on "
                "SM121 (sm_120/compute_120)",
                "capability",
            )
        )
    else:
        out.append(
            Finding(
                "G7",
                Status.FAIL,
                f"capability {cap}: GB10, but torch was built for {', '.join(arch)}: "
                "no sm_120/compute_120 code to run on SM121",
                "capability",
                tuple(arch),
                "use a CUDA 13 torch (cu130 index or NGC) built with sm_120",
            )
        )
    intent = _nvfp4_intent(f)
    if intent:
        out.append(
            Finding(
                "G7",
                Status.WARN,
                f"NVFP4 is intended ({intent}): on SM121 it runs ~32% slower than FP8 unless the kernels "
                "target sm_121a, and sparkenv cannot yet read the kernels' SM targets",
                "nvfp4",
                (intent,),
                "stay on FP8 unless your kernels are built for sm_121a "
                "(cuobjdump --list-elf on the kernel library shows sm_121a)",
            )
        )
    return out


def _nvfp4_intent(f: GateFacts) -> str | None:
    quant = parsers.option_value(f.workload, ("--quantization", "--quant", "--dtype", "--kv-cache-dtype"))
    if quant and any(w in quant.lower() for w in FP4_WORDS):
        return f"workload argument {quant}"
    flag = f.env.get("SPARKENV_NVFP4", "")
    if flag not in ("", "0"):
        return f"$SPARKENV_NVFP4={flag}"
    quant_env = f.env.get("QUANTIZATION", "")
    if any(w in quant_env.lower() for w in FP4_WORDS):
        return f"$QUANTIZATION={quant_env}"
    return None
