"""The Unsloth family (unsloth, unsloth-zoo …, from data/packages.toml): one definition for every stage."""

from __future__ import annotations

from collections.abc import Iterable

from sparkenv.knowledge import packages


def family() -> tuple[str, ...]:
    """Canonical names of the family, the main package first."""
    return packages().unsloth_family


def is_member(key: str) -> bool:
    """`key` is a canonical (PEP 503) name."""
    return key in family()


def installed(keys: Iterable[str]) -> str | None:
    """The family member that speaks for the family among `keys` (canonical names): the main package if
    present, else the first other member; None when no member is there."""
    present = set(keys)
    return next((k for k in family() if k in present), None)
