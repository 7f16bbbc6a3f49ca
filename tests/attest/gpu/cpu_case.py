"""Workloads that never reach the GPU (sparkenv attest's NVML case): `numpy` is matrix products in numpy
(no torch); `torch` a torch model whose device option was left at cpu. For SECONDS."""

import sys
import time

kind, seconds = sys.argv[1], float(sys.argv[2])
end, n = time.monotonic() + seconds, 0
if kind == "numpy":
    import numpy as np

    a = np.random.rand(512, 512)
    while time.monotonic() < end:
        a = (a @ a) / 512.0
        n += 1
else:
    import torch

    device = "cpu"  # the option left at its default
    layers = (torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512))
    model = torch.nn.Sequential(*layers).to(device)
    x = torch.randn(64, 512, device=device)
    with torch.no_grad():
        while time.monotonic() < end:
            model(x)
            n += 1
print(f"cpu_case {kind}: {n} steps", flush=True)
