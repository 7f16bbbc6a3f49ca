"""rules/g1.py, every stage both ways: CUDA 12 or CPU-only builds on a CUDA 13 target."""

from __future__ import annotations

import pytest
import stage_facts as sf
from rule_table import Row, check, ids

from sparkenv.core.report import Status
from sparkenv.facts.resolved import Unresolved

PASS, WARN, FAIL, INFO = Status.PASS, Status.WARN, Status.FAIL, Status.INFO
CU130 = "install the CUDA 13 build from https://download.pytorch.org/whl/cu130 or use the NGC image"
LIVE_FIX = CU130
GH_WHEEL = (
    "https://github.com/Dao-AILab/flash-attention/releases/download/v2.8.3/"
    "flash_attn-2.8.3+cu12torch2.9cxx11abiTRUE-cp312-cp312-linux_x86_64.whl"
)


def _installed(ctx, *dists, arch="x86_64", **kw):
    """Install each (name, version, files, requires) into a real environment, then audit it."""
    env = ctx.env(arch)
    for name, version, files, *requires in dists:
        env.add(name, version, requires=requires[0] if requires else (), files=files)
    return sf.installed(ctx, arch, **kw)


def _so(ctx, *needed, arch="x86_64"):
    return ctx.elves.linked(tuple(needed), arch)


ROWS = [
    # --- Stage.DECLARED ----------------------------------------------------------------------------
    Row("g1.declared", "cu130 label", lambda c: sf.declared(c, "torch==2.11.0+cu130\n"), "torch", PASS),
    Row(
        "g1.declared",
        "cu130 index name",
        lambda c: sf.declared(c, "cupy-cuda13x==13.6.0\n"),
        "cupy-cuda13x",
        PASS,
    ),
    Row(
        "g1.declared",
        "-cu12 name",
        lambda c: sf.declared(c, "nvidia-cuda-runtime-cu12==12.8.90\n"),
        "nvidia-cuda-runtime-cu12",
        FAIL,
        "replace it with nvidia-cuda-runtime>=13,<14",
    ),
    Row(
        "g1.declared",
        "+cu128 label",
        lambda c: sf.declared(c, "torch==2.9.1+cu128\n"),
        "torch",
        FAIL,
        CU130,
        "CUDA 12 build (+cu label)",
    ),
    Row(
        "g1.declared",
        "+cpu label",
        lambda c: sf.declared(c, "torchao==0.9.0+cpu\n"),
        "torchao",
        FAIL,
        CU130,
        "CPU-only build (+cpu)",
    ),
    Row(
        "g1.declared",
        "versioned CUDA wheel",
        lambda c: sf.declared(c, "cuda-toolkit==12.8.1\n"),
        "cuda-toolkit",
        FAIL,
        "use cuda-toolkit 13.x",
    ),
    Row(
        "g1.declared",
        "unlabelled old torch pin",
        lambda c: sf.declared(c, "torch==2.9.0\n"),
        "torch",
        WARN,
        "pin torch>=2.11",
    ),
    Row(
        "g1.declared",
        "CUDA 12 index",
        lambda c: sf.declared(c, "--extra-index-url https://download.pytorch.org/whl/cu128\nrequests\n"),
        "https://download.pytorch.org/whl/cu128",
        FAIL,
        "use https://download.pytorch.org/whl/cu130",
    ),
    Row(
        "g1.declared",
        "wheel URL for another CPU",
        lambda c: sf.declared(c, f"flash-attn @ {GH_WHEEL}\n"),
        "flash-attn",
        FAIL,
        "use a wheel built for aarch64",
        "not aarch64",
    ),
    Row(
        "g1.declared",
        "markers for the target, not the host",
        lambda c: sf.declared(c, "torch==2.9.1+cu128; platform_machine == 'x86_64'\n"),
        "inputs",
        INFO,
        None,
        "1 do not apply on aarch64",
    ),
    # --- Stage.RESOLVED ----------------------------------------------------------------------------
    Row(
        "g1.resolved",
        "cu130 torch",
        lambda c: sf.resolved(sf.locked("torch", "2.9.1+cu130", ("nvidia-cuda-runtime==13.0.48",))),
        "torch",
        PASS,
    ),
    Row(
        "g1.resolved",
        "+cu128 torch",
        lambda c: sf.resolved(sf.locked("torch", "2.9.1+cu128")),
        "torch",
        FAIL,
        CU130,
    ),
    Row(
        "g1.resolved",
        "requires a CUDA 12 runtime",
        lambda c: sf.resolved(sf.locked("mylib", "1.0", ("nvidia-cuda-runtime-cu12==12.8.90",))),
        "mylib",
        FAIL,
        "pick a mylib build for CUDA 13",
        "(CUDA 12)",
    ),
    Row(  # uv's "no wheel fits the target" is G1's (rules/unresolved.py), said at the resolved stage
        "g1.resolved",
        "a requirement no wheel of which fits the target",
        lambda c: sf.resolved(
            sf.locked("app", "1.0", ("lib",)),
            unresolved=(
                Unresolved(
                    "lib",
                    "platform",
                    "2.0",
                    "lib==2.0 has no wheels with a matching platform tag",
                    nearest="1.9",
                ),
            ),
        ),
        "lib",
        FAIL,
        "require lib==1.9, the nearest release with a wheel for aarch64-manylinux_2_39",
        "lib 2.0 (via app → lib): no wheel of it fits aarch64-manylinux_2_39 and it has no sdist",
    ),
    Row(
        "g1.resolved",
        "torch without any CUDA",
        lambda c: sf.resolved(sf.locked("torch", "2.9.1")),
        "torch",
        FAIL,
        "download.pytorch.org/whl/cu130",
        "CPU-only build",
    ),
    Row(
        "g1.resolved",
        "torchaudio pinning the base's torch",
        lambda c: sf.resolved(
            sf.locked("torchaudio", "2.10.0", ("torch==2.10.0a0+b558c986e8.nv25.11",)), profile="ngc-25.11"
        ),
        "torchaudio",
        PASS,
        None,
        "the base's build",
    ),
    Row(  # torch==2.8.0 is not the base's 2.10.0a0: the pin is no evidence of a CUDA build
        "g1.resolved",
        "torchaudio pinning another torch than the base's",
        lambda c: sf.resolved(sf.locked("torchaudio", "2.8.0", ("torch==2.8.0",)), profile="ngc-25.11"),
        "torchaudio",
        None,
    ),
    Row(  # a CUDA 12 plugin is not evidence for a CUDA build PASS: the plugin's own line fails
        "g1.resolved",
        "jax with its CUDA 12 plugin",
        lambda c: sf.resolved(sf.locked("jax", "0.7.0", ("jax-cuda12-plugin==0.7.0",))),
        "jax",
        FAIL,
        "pick a jax build for CUDA 13",
        "(CUDA 12)",
    ),
    # --- Stage.INSTALLED ---------------------------------------------------------------------------
    Row(
        "g1.installed",
        "links libcudart.so.13",
        lambda c: _installed(
            c, ("torch", "2.11.0+cu130", {"torch/lib/libtorch_cuda.so": _so(c, "libcudart.so.13")})
        ),
        "torch",
        PASS,
        None,
        "needs CUDA 13",
    ),
    Row(
        "g1.installed",
        "links libcudart.so.12",
        lambda c: _installed(c, ("mylib", "1.0", {"mylib/_C.so": _so(c, "libcudart.so.12")})),
        "mylib",
        FAIL,
        "no known CUDA 13 build of mylib",  # never sent to PyTorch's index: it is not a PyTorch package
        "needs CUDA 12",
    ),
    Row(
        "g1.installed",
        "CUDA 12 library pulled in by a package",
        lambda c: _installed(
            c, ("nvidia-cublas-cu12", "12.8.4.1", None), ("mylib", "1.0", None, ["nvidia-cublas-cu12"])
        ),
        "nvidia-cublas-cu12",
        FAIL,
        "fix mylib first (it pulls nvidia-cublas-cu12 in)",
    ),
    Row(
        "g1.installed",
        "CUDA 12 residue nothing requires",
        lambda c: _installed(c, ("nvidia-cublas-cu12", "12.8.4.1", None)),
        "nvidia-cublas-cu12",
        WARN,
        "pip uninstall nvidia-cublas-cu12",
    ),
    Row(
        "g1.installed",
        "+cpu label",
        lambda c: _installed(c, ("torchao", "0.9.0+cpu", None)),
        "torchao",
        FAIL,
        CU130,
    ),
    Row(
        "g1.installed",
        "torch without libtorch_cuda.so",
        lambda c: _installed(c, ("torch", "2.9.1", {"torch/lib/libtorch_cpu.so": _so(c)})),
        "torch",
        FAIL,
        CU130,
        "no libtorch_cuda.so",
    ),
    Row(
        "g1.installed",
        "shared object of another CPU",
        lambda c: _installed(c, ("mylib", "1.0", {"mylib/_C.so": _so(c, arch="x86_64")}), arch="aarch64"),
        "mylib",
        FAIL,
        "reinstall it for aarch64",
    ),
    Row(
        "g1.installed",
        "bitsandbytes with a CUDA 13 library",
        lambda c: _installed(
            c, ("bitsandbytes", "0.49.2", {"bitsandbytes/libbitsandbytes_cuda130.so": _so(c)})
        ),
        "bitsandbytes",
        PASS,
        None,
        "libbitsandbytes_cuda130.so",
    ),
    Row(
        "g1.installed",
        "bitsandbytes without a CUDA 13 library",
        lambda c: _installed(
            c, ("bitsandbytes", "0.45.0", {"bitsandbytes/libbitsandbytes_cuda124.so": _so(c)})
        ),
        "bitsandbytes",
        FAIL,
        "upgrade to bitsandbytes >= 0.48",
    ),
    # --- Stage.LIVE --------------------------------------------------------------------------------
    Row(
        "g1.live",
        "static: libtorch_cuda.so finds CUDA 13",
        lambda c: sf.live_raw("h200-static"),
        "torch",
        PASS,
        None,
        "built for CUDA 13.0",
    ),
    Row(
        "g1.live",
        "static: CPU-only torch",
        lambda c: sf.live_raw("h200-static", torch_static__library=None),
        "torch",
        FAIL,
        LIVE_FIX,
        "CPU-only build",
    ),
    Row(
        "g1.live",
        "static: torch built for CUDA 12",
        lambda c: sf.live_raw("h200-static", torch_static__cuda="12.8"),
        "torch",
        FAIL,
        LIVE_FIX,
        "needs CUDA 12",
    ),
    Row(
        "g1.live",
        "static: a CUDA library the loader will not find",
        lambda c: sf.live_raw(
            "h200-static",
            torch_static__needed=[
                {"soname": "libcudart.so.13", "major": 13, "found": None, "how": "not on any search path"}
            ],
        ),
        "torch",
        FAIL,
        "put the CUDA 13 runtime on the loader path",
    ),
    Row(
        "g1.live",
        "deep: the first CUDA operation ran",
        lambda c: sf.live_raw("h200-live"),
        "torch",
        PASS,
        None,
        "first CUDA operation ran",
    ),
    Row(
        "g1.live",
        "deep: torch.version.cuda is None",
        lambda c: sf.live_raw("h200-live", torch__stages__imported__cuda=None),
        "torch",
        FAIL,
        LIVE_FIX,
    ),
    Row(
        "g1.live",
        "a CUDA 12 runtime on the loader path",
        lambda c: sf.live_raw("h200-static", loader={"libcudart12": ["/usr/lib/libcudart.so.12"]}),
        "libcudart.so.12",
        WARN,
        "remove it from LD_LIBRARY_PATH",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g1(row, ctx):
    check(row, ctx)
