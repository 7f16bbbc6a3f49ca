"""A GPU program for `sparkenv attest`: a GPU model with one Linear layer left on the CPU (its input copied
over and back), trained for SECONDS."""

import sys
import time

import torch

seconds = float(sys.argv[1])
gpu_in = torch.nn.Linear(1024, 1024, device="cuda")
cpu_mid = torch.nn.Linear(1024, 1024)  # forgotten by .to("cuda"): runs on the CPU
gpu_out = torch.nn.Linear(1024, 1024, device="cuda")
params = [*gpu_in.parameters(), *cpu_mid.parameters(), *gpu_out.parameters()]
opt = torch.optim.SGD(params, lr=1e-3)
end, n = time.monotonic() + seconds, 0
while time.monotonic() < end:
    x = torch.randn(256, 1024, device="cuda")
    h = torch.relu(gpu_in(x))
    h = cpu_mid(h.cpu()).to("cuda")
    loss = gpu_out(torch.relu(h)).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    n += 1
torch.cuda.synchronize()
print(f"cpu-op model: {n} steps", flush=True)
