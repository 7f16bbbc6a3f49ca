"""What the workload means to do, read from its arguments and environment (shared by probes and checks)."""

from __future__ import annotations

from sparkenv.environment import parsers
from sparkenv.knowledge import gate


def nvfp4_intent(workload: list[str], env: dict[str, str]) -> str | None:
    """Why we think NVFP4 is intended, or None."""
    words = gate().nvfp4.words
    quant = parsers.option_value(workload, ("--quantization", "--quant", "--dtype", "--kv-cache-dtype"))
    if quant and any(w in quant.lower() for w in words):
        return f"workload argument {quant}"
    flag = env.get("SPARKENV_NVFP4", "")
    if flag not in ("", "0"):
        return f"$SPARKENV_NVFP4={flag}"
    quant_env = env.get("QUANTIZATION", "")
    if any(w in quant_env.lower() for w in words):
        return f"$QUANTIZATION={quant_env}"
    return None
