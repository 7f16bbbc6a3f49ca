"""GPU proof of the SDPA override against the real Unsloth (run on a CUDA machine; not a timed benchmark).

    python benchmarks/patch_sdpa_gpu.py setup WORKDIR        # tiny Llama + tokenizer, fake flash-attn
    python benchmarks/patch_sdpa_gpu.py scenario NAME WORKDIR # one scenario in this (fresh) interpreter

Each scenario runs in its own interpreter (the flags are process-wide) and prints one JSON line:
Unsloth's flags in every loaded module, what `select_attention_backend()` picks, transformers' helper, a
training-mode forward + backward of a tiny random Llama loaded through `FastLanguageModel`, and what the
attention calls went to: the profiler's aten ops and a count of flash_attn_func calls.

THE FLASH-ATTN HERE IS A FAKE, and says so: no flash-attn wheel for this machine can be had offline, and
building one takes an hour. `setup` writes a package `flash_attn` (with dist-info, version 2.7.4.post1)
that exposes what Unsloth's detection imports (`flash_attn.flash_attn_interface.flash_attn_gpu`) and a
`flash_attn_func` that counts its calls, marks them in the profiler as `FAKE_flash_attn_func`, and
computes with torch SDPA. It exists only with `WITH_FAKE_FA=1`, so that Unsloth's real detection sets
HAS_FLASH_ATTENTION=True and the dispatch would pick flash-attn, as it does next to NGC's flash-attn.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

FAKE_FA_INIT = '''"""FAKE flash_attn for sparkenv's GPU proof: counts calls, computes with torch SDPA."""
__version__ = "2.7.4.post1"
CALLS = {"flash_attn_func": 0, "flash_attn_varlen_func": 0}


def _sdpa(q, k, v, causal):
    import torch
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, S, H, D) -> (B, H, S, D)
    if k.shape[1] != q.shape[1]:
        rep = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    return sdpa(q, k, v, is_causal=causal).transpose(1, 2)


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, *args, **kwargs):
    import torch

    CALLS["flash_attn_func"] += 1
    with torch.profiler.record_function("FAKE_flash_attn_func"):
        return _sdpa(q, k, v, causal)


def flash_attn_varlen_func(*args, **kwargs):
    CALLS["flash_attn_varlen_func"] += 1
    raise RuntimeError("FAKE flash_attn_varlen_func called")
'''


def setup(work: Path) -> None:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    model_dir = work / "tiny-llama"
    specials = ["<unk>", "<s>", "</s>", "<pad>"]
    vocab = {t: i for i, t in enumerate(specials + [f"w{i}" for i in range(252)])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    fast.model_max_length = 256
    fast.save_pretrained(model_dir)
    cfg = LlamaConfig(
        vocab_size=256,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=3,
        torch_dtype="bfloat16",
    )
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(model_dir)
    fa = work / "fakefa"
    (fa / "flash_attn").mkdir(parents=True, exist_ok=True)
    (fa / "flash_attn" / "__init__.py").write_text(FAKE_FA_INIT)
    (fa / "flash_attn" / "flash_attn_interface.py").write_text(
        "from . import flash_attn_func, flash_attn_varlen_func\nflash_attn_gpu = object()  # FAKE\n"
    )
    info = fa / "flash_attn-2.7.4.post1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: flash-attn\nVersion: 2.7.4.post1\n")
    (info / "top_level.txt").write_text("flash_attn\n")
    (info / "RECORD").write_text(
        "flash_attn/__init__.py,,\nflash_attn/flash_attn_interface.py,,\n"
        "flash_attn-2.7.4.post1.dist-info/METADATA,,\n"
    )
    print(json.dumps({"setup": str(work), "torch": torch.__version__}))


def _flags() -> dict[str, dict[str, object]]:
    names = ("HAS_FLASH_ATTENTION", "HAS_FLASH_ATTENTION_SOFTCAPPING", "HAS_XFORMERS")
    out: dict[str, dict[str, object]] = {}
    for name, mod in sorted(sys.modules.items()):
        if mod is None or not name.startswith("unsloth"):
            continue
        ns = vars(mod)
        found = {n: ns[n] for n in names if n in ns}
        if found:
            out[name] = found
    return out


def scenario(name: str, work: Path) -> dict[str, object]:
    result: dict[str, object] = {"scenario": name, "fake_flash_attn": "flash_attn" in sys.modules}
    t0 = time.perf_counter()
    if name == "force-before":
        from sparkenv.patches import force_sdpa

        result["force_sdpa"] = force_sdpa()["message"]
    import torch
    import unsloth  # the real import
    from unsloth import FastLanguageModel

    result["import_s"] = round(time.perf_counter() - t0, 1)
    result["unsloth"] = unsloth.__version__
    if name == "one-flag":
        import unsloth.models._utils

        unsloth.models._utils.HAS_FLASH_ATTENTION = False  # the widely shared patch
    if name == "force-after":
        from sparkenv.patches import force_sdpa

        result["force_sdpa"] = force_sdpa()["message"]
    import transformers.utils
    import unsloth.utils.attention_dispatch as dispatch

    result["flags"] = _flags()
    result["dispatch"] = dispatch.select_attention_backend()
    result["dispatch_varlen"] = dispatch.select_attention_backend(use_varlen=True)
    result["transformers"] = transformers.__version__
    result["tf_is_flash_attn_2_available"] = transformers.utils.is_flash_attn_2_available()
    sdpa_calls = {"n": 0}
    real_sdpa = dispatch.scaled_dot_product_attention

    def counting_sdpa(*a, **k):  # instrumentation: the dispatch's own reference to torch SDPA
        sdpa_calls["n"] += 1
        return real_sdpa(*a, **k)

    dispatch.scaled_dot_product_attention = counting_sdpa
    try:
        model, _tok = FastLanguageModel.from_pretrained(
            model_name=str(work / "tiny-llama"), max_seq_length=128, dtype=torch.bfloat16, load_in_4bit=False
        )
        result["config_attn_implementation"] = getattr(model.config, "_attn_implementation", None)
        model.train()
        ids = torch.randint(4, 256, (2, 64), device="cuda")
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            out = model(input_ids=ids, labels=ids)
            out.loss.backward()
        torch.cuda.synchronize()
        result["loss"] = round(float(out.loss), 4)
        ops = sorted(
            {
                e.key
                for e in prof.key_averages()
                if any(w in e.key.lower() for w in ("flash", "scaled_dot_product", "efficient_attention"))
            }
        )
        result["profiler_attention_ops"] = ops
    except Exception as exc:  # recorded, not hidden
        result["model_error"] = f"{exc.__class__.__name__}: {exc}"[:500]
    result["dispatch_sdpa_calls"] = sdpa_calls["n"]
    if "flash_attn" in sys.modules:
        result["fake_flash_attn_calls"] = dict(sys.modules["flash_attn"].CALLS)
    from sparkenv.patches import sdpa

    st = sdpa.status()
    result["status"] = {
        k: st[k] for k in ("active", "installed", "installed_by", "mode", "dispatch", "leaks")
    }
    result["status"]["n_changes"] = len(st["changes"])
    result["status"]["changes_sample"] = st["changes"][:12]
    result["status"]["transformers_helpers"] = st["transformers_helpers"]
    result["status"]["errors"] = st["errors"]
    result["gpu"] = torch.cuda.get_device_name(0)
    return result


def main(argv: list[str]) -> int:
    if argv[0] == "setup":
        setup(Path(argv[1]))
        return 0
    name, work = argv[1], Path(argv[2])
    try:
        print("RESULT " + json.dumps(scenario(name, work), default=str), flush=True)
    except Exception as exc:
        import traceback

        traceback.print_exc()
        print("RESULT " + json.dumps({"scenario": name, "error": f"{exc.__class__.__name__}: {exc}"[:800]}))
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.exit(main(sys.argv[1:]))
