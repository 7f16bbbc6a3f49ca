"""The options of the resolve stage's commands, declared once (sparkenv/core/optionspec.py): `check`'s typer
command and its lean parser (resolve/check_args.py) read CHECK; `lock`'s (resolve/lock_args.py) read LOCK,
which shares the target's options with CHECK."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparkenv.core.optionspec import Option
from sparkenv.core.safe_read import STDIN_ARG

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

ALLOW_OUTSIDE = Option(
    "allow_outside",
    ("--allow-outside",),
    many=True,
    metavar="PATH",
    help="Let an include or constraint (-r, -c) inside an input name a file under PATH, outside the "
    "project (a monorepo's shared requirements). Repeatable; also [tool.sparkenv] allow-outside.",
)

REQUIREMENT = Option(
    "requirement",
    ("-r",),  # as pip users type it
    many=True,
    metavar="FILE",
    help="A requirements file, as pip's -r names one (the same as giving it as INPUT). Repeatable.",
)

CHECK = (REQUIREMENT, PROFILE, PLATFORM, EXTRA, GROUP, LOCK_INPUT, PIP, ALLOW_OUTSIDE)  # in --help's order

OUTPUT_DIR = Option(
    "output_dir",
    ("--output-dir",),
    metavar="DIR",
    help="Where pylock.<profile>.toml goes (default: lockfiles/ at the project root, found as uv finds it: "
    "the nearest pyproject.toml, else the git root).",
)
CHECK_ONLY = Option(
    "check_only",
    ("--check",),
    bool,
    default=False,
    help="Write nothing; exit 1 when the lock is stale against its inputs. Without INPUT, re-check every "
    "lock in the output folder against the inputs recorded in it.",
)
INDEX_URL = Option(
    "index_url", ("--index-url",), metavar="URL", help="The package index (default: the inputs', else PyPI)."
)
EXTRA_INDEX_URL = Option(
    "extra_index_url", ("--extra-index-url",), many=True, metavar="URL", help="A further index; repeatable."
)
ALLOW_REPLACE = Option(
    "allow_replace",
    ("--allow-replace",),
    many=True,
    metavar="NAME",
    help="Replace the base's NAME on purpose (e.g. torch): it is resolved like any package instead of being "
    "kept out, requirements on it are no longer held to the base's version, and the lock records it. "
    "Repeatable.",
)
EXCLUDE_NEWER = Option(
    "exclude_newer",
    ("--exclude-newer",),
    metavar="DATE",
    help="Ignore files uploaded after DATE (RFC 3339 timestamp or YYYY-MM-DD), passed to uv: a re-lock gives "
    "the same versions later. Recorded in the lock.",
)
TIMEOUT = Option(
    "timeout",
    ("--timeout",),
    float,
    default=180.0,  # index/deadline.py TOTAL_S
    metavar="SECONDS",
    help="Give up on the resolver and the package index after this long, all requests together (a "
    "positive number).",
)
REQUEST_TIMEOUT = Option(
    "request_timeout",
    ("--request-timeout",),
    float,
    default=30.0,  # index/deadline.py REQUEST_S
    metavar="SECONDS",
    help="Give up on one request to the package index (uv's and sparkenv's own) after this long, however "
    "slowly it answers (a positive number).",
)

FIX = Option(
    "fix",
    ("--fix",),
    bool,
    default=False,
    help="When the lock is blocked, write the fixes that re-resolved beside the inputs (NAME.fixed.EXT), "
    "show the diff and lock them; nothing is written when they do not lock ready.",
)
WRITE = Option(
    "write",
    ("--write",),
    bool,
    default=False,
    help="With --fix: change the inputs in place instead of writing NAME.fixed.EXT beside them.",
)

LOCK = (
    REQUIREMENT,
    PROFILE,
    PLATFORM,
    OUTPUT_DIR,
    CHECK_ONLY,
    INDEX_URL,
    EXTRA_INDEX_URL,
    EXTRA,
    GROUP,
    ALLOW_REPLACE,
    EXCLUDE_NEWER,
    TIMEOUT,
    REQUEST_TIMEOUT,
    UPGRADE,
    UPGRADE_PACKAGE,
    ALLOW_OUTSIDE,
    FIX,
    WRITE,
)  # in --help's order


STDIN = STDIN_ARG  # an INPUT read from standard input


def inputs_of(positional: list[str], values: Mapping[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """The inputs a command reads — the -r files, then the positional INPUTs — and the other options'
    values: the same for the typer command and the lean parser, which both call it."""
    rest = dict(values)
    return [*(rest.pop("requirement", None) or []), *positional], rest
