"""Installed layouts the audit tests share (tests/audit and tests/test_contract.py)."""

from __future__ import annotations

LINUX = '; platform_system == "Linux"'


def cuda13_torch(env, elves, version: str = "2.11.0") -> None:
    """A torch laid out like PyPI's 2.11 for CUDA 13: .so.12 names for cuFFT, cuSOLVER, cuSPARSE."""
    env.add(
        "torch",
        version,
        requires=[f"cuda-toolkit[cublas,cudart]==13.0.2{LINUX}", "filelock"],
        files={
            "torch/lib/libtorch_cuda.so": elves.linked(
                (
                    "libcudart.so.13",
                    "libcublas.so.13",
                    "libcufft.so.12",
                    "libcusolver.so.12",
                    "libcusparse.so.12",
                    "libcurand.so.10",
                    "libnccl.so.2",
                    "libcudnn.so.9",
                ),
                arch=env.arch,
            ),
            "torch/__init__.py": "",
        },
    )
    env.add(
        "nvidia-cufft",
        "12.0.0.61",
        files={"nvidia/cu13/lib/libcufft.so.12": elves.stub("libcufft.so.12", env.arch)},
    )
