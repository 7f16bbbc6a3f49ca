"""Shared objects built for another CPU than the environment's (an x86_64 wheel copied onto a Spark, a
wrong --platform): one decision for G1, which fails any distribution carrying them, and G2, which says
why flash-attn does not fit. Each rule words it for its own gotcha."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sparkenv.facts.installed import DistFacts, SharedObject


def shared_objects(df: DistFacts, machine: str) -> list[SharedObject]:
    """The distribution's shared objects whose ELF machine is not `machine`, in the order found."""
    return [so for so in df.shared_objects if so.info.machine != machine]
