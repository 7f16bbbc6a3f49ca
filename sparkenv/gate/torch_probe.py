"""The gate's one torch import: run as a separate process (`python torch_probe.py`), standard library and
torch only, so a segfault or a hang in CUDA start-up kills this process, never the gate.

It prints one JSON object per line as it goes ({"stage": ..., ...}), flushing each, so the parent knows
how far it got when the process dies. Arguments: --bandwidth (time a device copy), --flash (try a tiny
flash-attn call).
"""

from __future__ import annotations

import importlib.util
import json
import os
import site
import sys
import time


def emit(stage: str, **data: object) -> None:
    print(json.dumps({"stage": stage, **data}, default=str), flush=True)


def main(argv: list[str]) -> int:
    started = time.perf_counter()
    emit("start", python=sys.version.split()[0], executable=sys.executable)
    try:
        import torch
    except BaseException as exc:  # ImportError with "libcudart.so.12: cannot open …", undefined symbol …
        emit("import_error", error=f"{exc.__class__.__name__}: {exc}".splitlines()[0])
        return 0
    emit("imported", **_imported(torch, time.perf_counter() - started))
    try:
        available = torch.cuda.is_available()
        count = torch.cuda.device_count()
    except Exception as exc:
        emit("cuda_error", error=f"{exc.__class__.__name__}: {exc}".splitlines()[0])
        return 0
    emit("devices", available=available, count=count)
    if not available or count == 0:
        return 0
    device = _first_op(torch)
    if device is None:
        return 0
    emit("first_op", **device)
    if "--flash" in argv:
        emit("flash", **_flash(torch))
    if "--bandwidth" in argv:
        emit("bandwidth", **_bandwidth(torch))
    if importlib.util.find_spec("unsloth") is not None:
        if "--import-unsloth" in argv:
            _import_unsloth()
        emit("sdpa_override", **_sdpa_status(argv))
    emit("done", total_s=round(time.perf_counter() - started, 3))
    return 0


def _imported(torch, import_s: float) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """torch's version, CUDA build, commit and cuDNN, as the imported module says."""
    facts: dict[str, object] = {
        "version": torch.__version__,
        "cuda": torch.version.cuda,
        "git": getattr(torch.version, "git_version", None),
        "import_s": round(import_s, 3),
        "file": torch.__file__,
    }
    try:
        facts["cudnn"] = torch.backends.cudnn.version()
    except Exception as exc:  # cuDNN missing must not hide the rest
        facts["cudnn_error"] = str(exc).splitlines()[0]
    return facts


def _first_op(torch) -> dict[str, object] | None:  # type: ignore[no-untyped-def]
    """The first CUDA operation and the device it ran on; None (the error emitted) when it failed."""
    t0 = time.perf_counter()
    try:
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
    except Exception as exc:
        emit("first_op_error", error=f"{exc.__class__.__name__}: {exc}".splitlines()[0])
        return None
    props = torch.cuda.get_device_properties(0)
    device: dict[str, object] = {
        "first_op_s": round(time.perf_counter() - t0, 3),
        "name": torch.cuda.get_device_name(0),
        "capability": list(torch.cuda.get_device_capability(0)),
        "arch_list": torch.cuda.get_arch_list(),
        "total_memory": props.total_memory,
        "multi_processor_count": props.multi_processor_count,
        "is_integrated": bool(getattr(props, "is_integrated", False)),
    }
    try:
        device["mem_get_info"] = list(torch.cuda.mem_get_info())
    except Exception as exc:
        device["mem_get_info_error"] = str(exc).splitlines()[0]
    return device


def _import_unsloth() -> None:
    """Slow (~25 s), so opt-in: with Unsloth loaded, status() reports what its dispatch picks."""
    t0 = time.perf_counter()
    try:
        import unsloth  # noqa: F401
    except BaseException as exc:
        emit("unsloth_import_error", error=f"{exc.__class__.__name__}: {exc}".splitlines()[0])
    else:
        emit("unsloth_imported", seconds=round(time.perf_counter() - t0, 1))


def _flash(torch) -> dict[str, object]:  # type: ignore[no-untyped-def]
    try:
        import flash_attn
        from flash_attn import flash_attn_func
    except Exception as exc:
        return {"importable": False, "error": f"{exc.__class__.__name__}: {exc}".splitlines()[0]}
    try:
        q = torch.randn(1, 16, 2, 64, device="cuda", dtype=torch.float16)
        out = flash_attn_func(q, q, q)
        torch.cuda.synchronize()
        return {"importable": True, "works": bool(out.shape == q.shape), "version": flash_attn.__version__}
    except Exception as exc:
        return {
            "importable": True,
            "works": False,
            "version": getattr(flash_attn, "__version__", None),
            "error": f"{exc.__class__.__name__}: {exc}".splitlines()[0],
        }


def _sdpa_status(argv: list[str]) -> dict[str, object]:
    """Whether sparkenv's SDPA override is installed and active, without importing Unsloth (slow).

    The hook module the .pth loads comes first: it is there wherever the override is, also where
    sparkenv itself is not importable (a built image runs sparkenv isolated from the workload's Python).
    """
    modules = [a.split("=", 1)[1] for a in argv if a.startswith("--sdpa-module=")] + ["sparkenv.patches.sdpa"]
    errors = []
    for name in modules:
        try:
            return dict(importlib.import_module(name).status())
        except Exception as exc:
            errors.append(f"{name}: {exc.__class__.__name__}: {exc}")
    pth = next((a.split("=", 1)[1] for a in argv if a.startswith("--sdpa-pth=")), "sparkenv-sdpa.pth")
    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    installed = any(os.path.exists(os.path.join(d, pth)) for d in dirs)
    return {"installed": installed, "active": None, "error": "; ".join(errors)}


def _bandwidth(torch, size_mb: int = 512, iters: int = 20) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Device-to-device copy: bytes read + bytes written over time, median of `iters`."""
    n = size_mb * (1 << 20)
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    dst.copy_(src)
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000.0)
    times.sort()
    median = times[len(times) // 2]
    return {"bytes": n, "iters": iters, "median_s": median, "gb_per_s": round(2 * n / median / 1e9, 1)}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
