"""A model whose linear layers are served by a Marlin kernel (the stand-in, marlin_standin.cu, through
ctypes) with torch's own operators around them (attest's fallback case). Args: LIBRARY SECONDS."""

import ctypes
import sys
import time

import torch

lib = ctypes.CDLL(sys.argv[1])
lib.marlin_gemm.restype = ctypes.c_int
lib.marlin_gemm.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3 + [ctypes.c_void_p]
seconds = float(sys.argv[2])
x = torch.randn(256, 1024, device="cuda")
w = [torch.randn(1024, 1024, device="cuda") / 32 for _ in range(4)]
end, n = time.monotonic() + seconds, 0
while time.monotonic() < end:
    h = x
    for wi in w:
        out = torch.empty(h.shape[0], wi.shape[1], device="cuda")
        rc = lib.marlin_gemm(
            h.data_ptr(),
            wi.data_ptr(),
            out.data_ptr(),
            h.shape[0],
            wi.shape[1],
            h.shape[1],
            torch.cuda.current_stream().cuda_stream,
        )
        assert rc == 0, rc
        h = torch.nn.functional.gelu(torch.layer_norm(out, (out.shape[1],)))
    torch.cuda.synchronize()
    n += 1
print(f"marlin_case: {n} passes", flush=True)
