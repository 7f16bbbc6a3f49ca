"""Which optional part of sparkenv a command needs, and the one message that says how to get it.

`pip install sparkenv` is light (check, audit, gate, explain, patch, `build --dry-run`); `sparkenv[lock]`
adds uv, `sparkenv[build]` the docker SDK, `sparkenv[all]` both. A command missing its extra exits 3
(a needed service is missing) with this message, so the fix is always the same one line.
"""

from __future__ import annotations

from sparkenv.core.errors import ServiceMissing

EXTRAS = {
    "lock": ("uv", "`sparkenv lock` (and `sparkenv build INPUT…`) resolve with uv"),
    "build": (
        "the docker SDK",
        "`sparkenv build` and `sparkenv profiles new --from-image` talk to the Docker Engine API through it",
    ),
}


def missing(extra: str) -> ServiceMissing:
    what, why = EXTRAS[extra]
    return ServiceMissing(
        f"{what} is not installed: {why}; install it with pip install 'sparkenv[{extra}]' "
        "(or 'sparkenv[all]')"
    )
