"""The options of the resolve stage's commands, declared once (sparkenv/optionspec.py): `check`'s typer
command and its lean parser (resolve/check_args.py) read CHECK; `lock` reuses the target's options."""

from __future__ import annotations

from sparkenv.optionspec import Option

PROFILE = Option(
    "profile",
    ("--profile",),
    metavar="NAME|FILE",
    help="The target: a shipped profile (`sparkenv profiles`) or a profile file of your own (*.toml). "
    "Default: [tool.sparkenv] profile, else the profile of NVIDIA's DGX Spark playbooks.",
)
PLATFORM = Option(
    "platform",
    ("--platform",),
    metavar="OS/ARCH",
    help="Override the profile's platform: linux/aarch64 (DGX Spark) or linux/amd64 (x86_64 NVIDIA "
    "machines).",
)
EXTRA = Option(
    "extra",
    ("--extra",),
    many=True,
    metavar="NAME",
    help="Also read pyproject's optional-dependencies group NAME.",
)
GROUP = Option(
    "group",
    ("--group",),
    many=True,
    metavar="NAME",
    help="Also read pyproject's PEP 735 [dependency-groups] group NAME.",
)
LOCK_INPUT = Option(
    "lock_input",
    ("--lock-input",),
    bool,
    default=False,
    help="Judge INPUT as `sparkenv lock` installs it (the default; kept for older hooks).",
)
PIP = Option(
    "pip",
    ("--pip",),
    bool,
    default=False,
    help="Judge INPUT as a plain `pip install -r` installs it, not as `sparkenv lock` does: the Unsloth "
    "family with its dependencies (FAIL on a base with torch), drift-prone packages unpinned (WARN).",
)

UPGRADE = Option(
    "upgrade",
    ("--upgrade", "-U"),
    bool,
    default=False,
    help="Resolve afresh. Without it, a re-lock keeps the versions of the lock it replaces wherever the "
    "inputs still allow them, as `uv pip compile -o` does with its output file.",
)
UPGRADE_PACKAGE = Option(
    "upgrade_package",
    ("--upgrade-package", "-P"),
    many=True,
    metavar="NAME",
    help="Let NAME move to the newest version the inputs allow; the other versions are kept. Repeatable.",
)

CHECK = (PROFILE, PLATFORM, EXTRA, GROUP, LOCK_INPUT, PIP)  # in --help's order
