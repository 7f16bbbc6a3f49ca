"""A GPU program for `sparkenv attest`: torch on the GPU plus a CUDA extension loaded with ctypes (PTX-only or
machine-code build of ext.cu) whose kernel runs in a loop for SECONDS."""

import ctypes
import sys
import time

import torch

lib = ctypes.CDLL(sys.argv[1])
seconds = float(sys.argv[2])
a = torch.randn(1024, 1024, device="cuda")
end, n = time.monotonic() + seconds, 0
while time.monotonic() < end:
    assert lib.run_saxpy(1 << 20, 20) == 0
    a = torch.tanh(a @ a)
    torch.cuda.synchronize()
    n += 1
print(f"ext {sys.argv[1]}: {n} rounds", flush=True)
