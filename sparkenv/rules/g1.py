"""G1 — CUDA 12 (or CPU-only) builds on a CUDA 13 machine: every stage's judgement.

declared: names, +cu/+cpu labels, exact pins, index and wheel URLs of each requirement (check, lock);
resolved: every resolved file and its Requires-Dist, with the chain that pulled it in (lock);
installed: every distribution's CUDA major from names, labels, Requires-Dist, paths and the DT_NEEDED of
its shared objects, CPU-only torch, wrong-CPU shared objects, one library per CUDA release (audit,
build's self-audit);
live: torch's CUDA build, the first CUDA operation, a CUDA 12 runtime on the loader path (gate).
The CUDA major of each piece of evidence comes from rules/cuda_major.py, for all of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkenv.core.report import GotchaId
from sparkenv.rules import Lazy, Rule, Stage

if TYPE_CHECKING:
    from sparkenv.core.report import Finding
    from sparkenv.facts.resolved import ResolvedFacts


def resolved(facts: ResolvedFacts) -> list[Finding]:
    """Stage.RESOLVED: names, labels and Requires-Dist (g1_declared), and what each wheel ships
    (g1_wheels)."""
    from sparkenv.rules import g1_declared, g1_wheels, unresolved

    return (
        g1_declared.resolved(facts)
        + g1_wheels.resolved_wheel_files(facts)
        + unresolved.findings(facts, GotchaId.G1)
    )


RULES = (
    Rule(
        Stage.HOST,
        Lazy("host_system", "g1"),
        "outside any container: the NVIDIA kernel module (/proc/driver/nvidia/version: version and "
        "flavour, open or proprietary; /sys/module/nvidia/taint), whether NVML reaches the GPU, and the "
        "kernel, DGX OS release (/etc/dgx-release), driver and module flavour against known-bad hosts "
        "(data/hosts.toml, dated); the running kernel and driver against those the DGX OS release ships "
        "(hosts.toml [[dgx_os]]), a release newer than the data knows (an INFO)",
    ),
    Rule(
        Stage.DECLARED,
        Lazy("g1_declared", "declared"),
        "each requirement's name (-cu12), version label (+cu128, +cpu), exact pin of a versioned CUDA "
        "wheel, index URLs and wheel URLs (for another CPU), markers evaluated for the target",
    ),
    Rule(
        Stage.RESOLVED,
        resolved,
        "every resolved file's name, label and Requires-Dist for the target platform, with the chain "
        "that pulled it in; whether a resolved torch (onnxruntime-gpu, jax; torchvision and torchaudio "
        "through the torch they pin) shows CUDA at all: label, CUDA runtime requirement, CUDA library in "
        "its RECORD; each binary wheel's file list (zip central directory): one library per CUDA release "
        "and none for the target, CUDA libraries of another major it bundles; what GPU packages' shared "
        "objects link (DT_NEEDED, within a read budget); a package asking for CUDA libraries on another CPU "
        "only whose wheel for the target has none (a CPU-only build by class); a requirement no file of "
        "which installs on the target (no wheel for its platform, ABI or Python, no sdist), with the "
        "nearest release that has a wheel for it",
    ),
    Rule(
        Stage.INSTALLED,
        Lazy("g1_installed", "installed"),
        "every distribution's name, label, Requires-Dist, install paths and the DT_NEEDED sonames of its "
        "shared objects; CPU-only torch; shared objects of another CPU; one library per CUDA release "
        "(bitsandbytes' kind) without one for the target",
    ),
    Rule(
        Stage.LIVE,
        Lazy("g1_live", "live"),
        "by default from files: torch's version label, libtorch_cuda.so's CUDA libraries resolved the "
        "way the loader will, the driver (/proc/driver/nvidia/version or NVML) against the minimum for "
        "that CUDA release and the compatibility mode it runs in (native, forward, minor-version), a "
        "CUDA release or driver newer than data/drivers.toml knows (an INFO); with --deep "
        "torch.version.cuda and the first CUDA operation in an isolated process; a CUDA 12 runtime on the "
        "loader path",
    ),
)
