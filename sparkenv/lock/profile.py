"""Which profile a lock was made for, recorded so that every later command finds the same one from
anywhere in the project: a shipped profile by name, a profile file (`profiles new --from-image`) by its
path relative to the project root, and always the content's hash, so a changed profile is noticed
(`lock --check` says stale; `build` refuses)."""

from __future__ import annotations

import os
from pathlib import Path

from sparkenv.core import confine
from sparkenv.core.errors import SparkenvError
from sparkenv.environment import profiles
from sparkenv.facts.lock import Lock
from sparkenv.lock.write import profile_hash


def recorded(profile: profiles.Profile, lock_folder: Path) -> dict[str, str]:
    """The [tool.sparkenv] keys that name the profile of a lock written into `lock_folder`."""
    out = {"profile": profile.name, "profile-hash": profile_hash(profile)}
    if profile.file:
        root = confine.project_root(lock_folder, lock_folder.parent)  # as of_lock reads it back
        out["profile-file"] = Path(os.path.relpath(profile.file, root)).as_posix()
    return out


# An image keeps a lock's profile file beside its lock under this name (sparkenv build): a fixed name, so
# nothing a lock records reaches the Dockerfile, and none that a lock (pylock.*.toml) can have
KEPT = "lock-profile.toml"


def kept_path(lock: Lock) -> str | None:
    """Where, relative to the lock's folder, an image keeps the lock's profile file; None for a shipped
    profile, which sparkenv knows by name."""
    return KEPT if lock.profile_file else None


def of_lock(lock: Lock) -> profiles.Profile:
    """The profile the lock records; exit 2 naming the lock when it cannot be found."""
    folder = lock.file.parent
    where = f"{lock.path}: [tool.sparkenv]"
    if lock.profile_file:  # inside the lock's project only: a lock from elsewhere reads nothing outside it
        root = confine.project_root(folder, folder.parent)
        path = confine.inside(root, lock.profile_file, root, f"{where} profile-file")
        kept = folder / str(kept_path(lock))
        if not path.is_file() and kept.is_file():  # in an image: no project, the copy the build put there
            path = kept
        return profiles.load(str(path))
    named = lock.profile
    if named.endswith(".toml"):  # older locks named a profile file relative to themselves
        confine.inside(confine.project_root(folder, folder.parent), named, folder, f"{where} profile")
        return profiles.load(named, folder)
    if named and named not in profiles.shipped():
        raise SparkenvError(
            f"{where} profile {named!r} is not a shipped profile and the lock names no profile file: "
            f"re-lock with --profile FILE (this sparkenv records the file), or pass --profile FILE"
        )
    return profiles.load(named or None)


def changed(lock: Lock, profile: profiles.Profile) -> bool:
    """Has the profile's content changed since the lock was written? (unknown for locks without a hash)"""
    return bool(lock.profile_hash) and lock.profile_hash != profile_hash(profile)
