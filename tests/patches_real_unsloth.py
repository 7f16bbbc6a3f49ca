"""Child process for tests/patches/test_patches_unsloth.py: import the REAL `unsloth.utils.attention_dispatch`
(from the real unsloth wheel) on a machine without GPU or torch, apply a patch, print what it picks.

    python tests/patches_real_unsloth.py SRC PATCH ORDER
      SRC   folder holding the extracted unsloth/ and unsloth_zoo/ packages
      PATCH none | one-flag | force_sdpa | force_sdpa-xformers
      ORDER before | after  (the patch before or after the dispatch module is imported)

Real, executed as shipped: unsloth/utils/__init__.py, unsloth/utils/packing.py,
unsloth/utils/attention_dispatch.py (select_attention_backend and its module-level flag logic).

STUBBED, and why (each a stand-in for something that needs a GPU or is not installable here):
- `torch`: the CI machine has no torch (PyPI's Linux torch is the CUDA build, ~1 GB with its nvidia
  wheels). The stub has only what the three real modules touch at import time: Tensor, dtypes,
  nn.functional.scaled_dot_product_attention (with its "enable_gqa" doc) and cuda.is_available() = False.
- `unsloth` and `unsloth.models` as bare packages pointing at the real folders: the real
  `unsloth/__init__.py` stops without a GPU ("Unsloth cannot find any torch accelerator") and
  `unsloth/models/__init__.py` imports every model (torch, triton, bitsandbytes, peft, trl).
- `unsloth.models._utils`: the real one needs a GPU to decide its flags (torch.cuda.get_device_capability()
  >= 8 and `from flash_attn.flash_attn_interface import flash_attn_gpu`). The stub holds the values the
  real one computes on a GPU machine with flash-attn and xformers installed (HAS_FLASH_ATTENTION=True,
  HAS_FLASH_ATTENTION_SOFTCAPPING=True, xformers present) and the same `__all__` entries the dispatch
  star-imports.
- `flash_attn` and `xformers`: CUDA-only packages; stubs with the names the dispatch imports.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path


def _module(name: str, **attrs: object) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    return mod


def stub(src: Path) -> None:
    class Tensor:  # STUB torch
        pass

    def scaled_dot_product_attention(*a: object, **k: object) -> None:
        """... enable_gqa ... (stub: the real doc names enable_gqa on torch >= 2.5)"""

    torch = _module(
        "torch",
        Tensor=Tensor,
        bfloat16="bfloat16",
        float16="float16",
        float32="float32",
        int32="int32",
        int64="int64",
        bool="bool",
        device=str,
        dtype=type,
        cuda=types.SimpleNamespace(is_available=lambda: False),
    )
    nn = _module("torch.nn")
    functional = _module("torch.nn.functional", scaled_dot_product_attention=scaled_dot_product_attention)
    torch.nn, nn.functional = nn, functional
    _module(
        "flash_attn", flash_attn_func=lambda *a, **k: "FLASH", flash_attn_varlen_func=lambda *a, **k: None
    )
    attn_bias = types.SimpleNamespace(BlockDiagonalCausalMask=type("BlockDiagonalCausalMask", (), {}))
    xformers = _module("xformers", attn_bias=attn_bias)
    pkg = _module("unsloth", __path__=[str(src / "unsloth")])
    models = _module("unsloth.models", __path__=[str(src / "unsloth" / "models")])
    utils = _module(
        "unsloth.models._utils",
        __all__=[
            "HAS_FLASH_ATTENTION",
            "HAS_FLASH_ATTENTION_SOFTCAPPING",
            "xformers",
            "xformers_attention",
            "xformers_version",
        ],
        HAS_FLASH_ATTENTION=True,
        HAS_FLASH_ATTENTION_SOFTCAPPING=True,
        xformers=xformers,
        xformers_attention=lambda *a, **k: "XFORMERS",
        xformers_version="0.0.33",
    )
    pkg.models, models._utils = models, utils


def main(src: Path, patch: str, order: str) -> dict[str, object]:
    sys.path.insert(0, str(src))
    stub(src)
    from sparkenv.patches import sdpa

    def apply() -> object:
        if patch == "one-flag":
            sys.modules["unsloth.models._utils"].HAS_FLASH_ATTENTION = False  # the widely shared patch
            return None
        if patch.startswith("force_sdpa"):
            return sdpa.force_sdpa("xformers" if patch.endswith("xformers") else "sdpa")
        return None

    res = apply() if order == "before" else None
    import unsloth.utils.attention_dispatch as dispatch  # the real module, through the import system

    if order == "after":
        res = apply()
    assert Path(dispatch.__file__).is_relative_to(src), dispatch.__file__
    st = sdpa.status()
    return {
        "dispatch_file": dispatch.__file__,
        "select": dispatch.select_attention_backend(),
        "select_varlen": dispatch.select_attention_backend(use_varlen=True),
        "dispatch_HAS_FLASH_ATTENTION": dispatch.HAS_FLASH_ATTENTION,
        "dispatch_HAS_XFORMERS": dispatch.HAS_XFORMERS,
        "utils_HAS_FLASH_ATTENTION": sys.modules["unsloth.models._utils"].HAS_FLASH_ATTENTION,
        "imported_flash_attn_func": "flash_attn_func" in vars(dispatch),
        "loader_restored": type(dispatch.__loader__).__name__,
        "message": res.get("message") if isinstance(res, dict) else None,
        "status": {k: st[k] for k in ("active", "installed_by", "dispatch", "leaks", "changes", "errors")},
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3])))
