"""`sparkenv host`'s own options, declared once (sparkenv/core/optionspec.py); --facts and --dump-facts are
declared there for the gate and host alike (one snapshot format, one spelling)."""

from __future__ import annotations

from sparkenv.core.optionspec import DUMP_FACTS, FACTS, Option

IMAGE = Option(
    "image",
    ("--image",),
    metavar="IMAGE",
    help="Also run one container of IMAGE (already pulled) with every GPU requested, as `docker run --gpus "
    "all IMAGE nvidia-smi -L`, and say what it sees; the container is removed afterwards.",
)
TIMEOUT = Option(
    "timeout",
    ("--timeout",),
    float,
    default=60.0,
    metavar="SECONDS",
    help="How long the --image container may run (finite, > 0).",
)

HOST = (IMAGE, TIMEOUT, DUMP_FACTS, FACTS)  # in --help's order
