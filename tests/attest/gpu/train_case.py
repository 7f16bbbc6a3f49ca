"""A GPU program for `sparkenv attest`: a small transformer's training steps (bf16 autocast, SDPA inside
nn.TransformerEncoderLayer, AdamW) for SECONDS; then, with the window over, torch.profiler over 10 more
steps, its own total GPU time (key_averages) written next to the probe's reading of the same profile."""

import json
import sys
import time

import torch

seconds, out = float(sys.argv[1]), sys.argv[2]
layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, device="cuda")
model = torch.nn.TransformerEncoder(layer, 4).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)


def step() -> None:
    x = torch.randn(16, 256, 512, device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


end, n = time.monotonic() + seconds, 0
while time.monotonic() < end:
    step()
    n += 1
torch.cuda.synchronize()
time.sleep(1.5)  # the probe's window is over (its timer stops the profiler at the next bytecode)
probe = sys.modules["sitecustomize"]
with torch.profiler.profile(
    activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
) as prof:
    for _ in range(10):
        step()
    torch.cuda.synchronize()
rows, summary = probe.read_events(
    prof.profiler.kineto_results.events(), ("scaled_dot_product", "flash", "attention")
)
# the total torch's own table prints ("Self CUDA time total"): the device events' self time
averages = prof.key_averages()
total_us = sum(e.self_device_time_total for e in averages if e.device_type != torch.autograd.DeviceType.CPU)
footer = [ln for ln in averages.table(row_limit=1).splitlines() if "time total" in ln]
with open(out, "w") as fh:
    json.dump(
        {"torch_self_device_us": total_us, "torch_table_footer": footer, "rows": rows, "summary": summary}, fh
    )
print(f"train: {n} steps in the window run; cross-check total {total_us:.0f} us", flush=True)
