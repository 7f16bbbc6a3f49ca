"""A stand-in for the flash_attn package (sparkenv attest's G2 case on the GPU machine): `flash_attn_func`
with flash-attn's signature and layout (batch, seqlen, heads, 64), computed by libflash_standin.so
(../../flash_standin.cu, nvcc-built), registered as flash-attn 2.6+ registers its entry points: a torch custom
operator flash_attn::_flash_attn_forward. Forward only; head size 64 only."""

import ctypes
import os

import torch

__version__ = "2.8.3+standin"
_LIB = ctypes.CDLL(os.environ["FLASH_STANDIN_LIB"])  # the nvcc build of ../../flash_standin.cu
_LIB.flash_fwd_hdim64.restype = ctypes.c_int
_LIB.flash_fwd_hdim64.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 3 + [ctypes.c_void_p]


@torch.library.custom_op("flash_attn::_flash_attn_forward", mutates_args=())
def _flash_attn_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    b, s, h, d = q.shape
    assert d == 64, "the stand-in has head size 64 only"
    qf, kf, vf = (t.transpose(1, 2).reshape(b * h, s, d).float().contiguous() for t in (q, k, v))
    out = torch.empty_like(qf)
    rc = _LIB.flash_fwd_hdim64(
        qf.data_ptr(),
        kf.data_ptr(),
        vf.data_ptr(),
        out.data_ptr(),
        b * h,
        s,
        int(causal),
        torch.cuda.current_stream().cuda_stream,
    )
    if rc:
        raise RuntimeError(f"flash_fwd_hdim64: CUDA error {rc}")
    return out.reshape(b, h, s, d).transpose(1, 2).to(q.dtype)


@_flash_attn_forward.register_fake
def _(q, k, v, causal):
    return torch.empty_like(q)


def flash_attn_func(q, k, v, causal=False):
    return _flash_attn_forward(q, k, v, causal)
