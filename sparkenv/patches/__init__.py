"""Runtime patches sparkenv applies inside an environment; today the G2 SDPA override for Unsloth.

    from sparkenv.patches import force_sdpa
    force_sdpa()            # before or after `import unsloth`; returns what it changed

`status()` reports the override's state without importing torch; `sparkenv patch sdpa --install`
activates it without code changes through a .pth file (switched off at run time by SPARKENV_SDPA=0).
"""

from __future__ import annotations

from sparkenv.patches.sdpa import force_sdpa, restore, status

__all__ = ["force_sdpa", "restore", "status"]
