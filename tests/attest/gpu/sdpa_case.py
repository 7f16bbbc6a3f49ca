"""A GPU program for `sparkenv attest`: SDPA with one backend forced (flash, efficient, cudnn,
math), random bf16 tensors, forward and backward in a loop for SECONDS. Run on the GPU machine
(tests/attest/gpu/run_all.sh)."""

import sys
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "math": SDPBackend.MATH,
}
backend, seconds = sys.argv[1], float(sys.argv[2])
q, k, v = (
    torch.randn(4, 16, 1024, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3)
)
proj = torch.nn.Linear(64, 64, device="cuda", dtype=torch.bfloat16)
end, n = time.monotonic() + seconds, 0
with sdpa_kernel(BACKENDS[backend]):
    while time.monotonic() < end:
        out = torch.nn.functional.scaled_dot_product_attention(proj(q), k, v, is_causal=True)
        out.float().sum().backward()
        torch.cuda.synchronize()
        n += 1
print(f"sdpa {backend}: {n} steps", flush=True)
