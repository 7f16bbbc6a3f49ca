"""A bf16 GPU workload for `gate --attest`'s overhead: 4096x4096 bf16 matrix products for SECONDS, the count
done each second written to OUT (one "t count" line a second), to compare throughput after the window
with an unwatched run."""

import sys
import time

import torch

seconds, out = float(sys.argv[1]), sys.argv[2]
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
t0 = time.monotonic()
done = 0
with open(out, "w") as fh:
    while (now := time.monotonic() - t0) < seconds:
        for _ in range(50):
            c = a @ b
        torch.cuda.synchronize()
        done += 50
        fh.write(f"{now:.3f} {done}\n")
print(f"bf16 workload: {done} products in {seconds:.0f} s", flush=True)
