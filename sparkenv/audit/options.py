"""The options of `sparkenv audit`, declared once (sparkenv/core/optionspec.py): its typer command
(audit/commands.py) and its lean parser (audit/audit_args.py) both read AUDIT."""

from __future__ import annotations

from sparkenv.core.optionspec import Option

LOCK = Option(
    "lock",
    ("--lock",),
    metavar="FILE",
    help="The project's lock (pylock.*.toml or a hashed requirements file): torch, triton, xformers and "
    "transformers are compared with it (G9).",
)
MACHINE = Option(
    "machine",
    ("--machine",),
    metavar="ARCH",
    help="The environment's CPU (aarch64, x86_64). Default: read from its interpreter.",
)
ROOT = Option(
    "root",
    ("--root",),
    metavar="DIR",
    help="Read container and NGC markers under DIR (a mounted image) instead of /.",
)
# None is the GB10 (cuda/coverage.parse_gpu_option reads it from data/gate.toml)
GPU = Option(
    "gpu",
    ("--gpu",),
    metavar="CAP",
    help="The GPU the environment must run on (G7 kernel coverage): 12.1 (GB10, DGX Spark; the default), 9.0 "
    "(H100/H200), 10.0 (B200) …; `none` skips the kernel check.",
)

FIX_PLAN = Option(
    "fix_plan",
    ("--fix-plan",),
    bool,
    default=False,
    help="After the findings, the pip/uv commands that fix the CUDA-major ones: only commands a dry run "
    "accepted against the environment, never an uninstall of what an installed distribution requires.",
)

AUDIT = (LOCK, MACHINE, ROOT, GPU, FIX_PLAN)  # in --help's order
