"""A model that asked for SDPA (attn_implementation="sdpa") whose attention takes flash-attn whenever
flash_attn imports, as Unsloth's does (G2's case): a 4-layer decoder, bf16, random weights, forward passes for
SECONDS. With standin/ on PYTHONPATH flash_attn imports (the stand-in, flash_standin.cu); without it the model
runs the SDPA it asked for. Run on the GPU machine (device_nvml_flash.sh)."""

import importlib.util
import sys
import time

import torch
import torch.nn.functional as F

attn_implementation = "sdpa"  # what the model's config asks for
use_flash = importlib.util.find_spec("flash_attn") is not None  # what the patched loader then does anyway
if use_flash:
    from flash_attn import flash_attn_func


class Block(torch.nn.Module):
    def __init__(self, d: int = 512, heads: int = 8) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))
        self.n1, self.n2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        if use_flash:
            a = flash_attn_func(q, k, v, causal=True)
        else:
            a = F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
            ).transpose(1, 2)
        x = x + self.out(a.reshape(b, s, d))
        return x + self.mlp(self.n2(x))


seconds = float(sys.argv[1])
model = torch.nn.Sequential(*(Block() for _ in range(4))).to("cuda", torch.bfloat16).eval()
x = torch.randn(4, 512, 512, device="cuda", dtype=torch.bfloat16)
end, n = time.monotonic() + seconds, 0
with torch.no_grad():
    while time.monotonic() < end:
        model(x)
        torch.cuda.synchronize()
        n += 1
print(f"flash_case: attn_implementation={attn_implementation} flash_attn={use_flash}: {n} passes", flush=True)
