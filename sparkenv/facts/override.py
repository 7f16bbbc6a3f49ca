"""The facts of `sparkenv patch sdpa`: what the SDPA override looks like in a site folder after the
action (judged by rules/g2.override_outcome). Frozen, no I/O."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OverrideFacts:
    action: str  # "install", "uninstall" or "status"
    site: str  # the site folder acted on
    target: str  # what the user named, for the fix commands
    pth: str
    module: str
    present: bool  # the .pth is there
    module_present: bool  # the hook module the .pth imports is there
    current: bool  # the hook module is this sparkenv's
    interpreter_found: bool
    verified: tuple[bool, str] | None  # after --install: did a fresh interpreter load it, and why not
    removed: tuple[str, ...]  # after --uninstall: the files removed
    source: str  # this sparkenv's hook module
