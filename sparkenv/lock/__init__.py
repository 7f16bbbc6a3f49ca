"""The lock: one owner for the PEP 751 `pylock.<profile>.toml` and the hashed requirements file beside it.

- `model.py` — the frozen `Lock` every reader gets: profile, image, digest, platform, the install stages
  in order with their packages and hashes, the --no-deps stages, what the base keeps, index URLs, the
  requirements file's name.
- `read.py` — the one reader: a lock `sparkenv lock` wrote (`build`, `lock --check`: stages from the
  pylock's `[tool.sparkenv]` table and each package's `[packages.tool.sparkenv] stage`, the hashed
  requirements checked against it), or any lock a user hands `audit --lock` (a foreign pylock, a hashed
  requirements file).
- `write.py` — the one writer (`sparkenv lock`): the pylock, then the hashed requirements rendered from
  the lock as read back, so the two cannot disagree.

A package of the shared core, not of `resolve/`: the resolver writes locks, but build and audit read
them, and neither should import the resolver to do so.
"""
