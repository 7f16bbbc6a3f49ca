"""What another stage may call of resolve/ (tests/test_layers.py holds every other module of it to itself):
`sparkenv build` locks its INPUT files as `sparkenv lock` does, and finds the profile a lock is named by
as check and lock find it."""

from __future__ import annotations

from sparkenv.resolve.check import named_profile, profile_for
from sparkenv.resolve.run import lock

__all__ = ["lock", "named_profile", "profile_for"]
