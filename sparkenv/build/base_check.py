"""Runs inside the image during `sparkenv build` (standard library only, any Python >= 3.8).

    base_check.py snapshot FILE NAME...   record every installed distribution (NAMEs: the base provides)
    base_check.py compare FILE            exit 1 when a provided distribution was replaced or removed since

The lock's stages install with --no-deps, but a stale or hand-edited lock can still carry a torch or a
triton: this step stops the build at the first layer that replaced one (G9).
"""

import json
import re
import sys
from importlib import metadata


def _norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed():
    seen = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            seen.setdefault(_norm(name), set()).add(dist.version)
    return {k: sorted(v) for k, v in seen.items()}


def snapshot(path, provided):
    installed = _installed()
    wanted = sorted({_norm(n) for n in provided})
    absent = [n for n in wanted if n not in installed]
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"provided": wanted, "installed": installed}, fh, indent=1, sort_keys=True)
    print(
        "sparkenv: the base provides "
        + ", ".join(f"{n} {'/'.join(installed[n])}" for n in wanted if n in installed)
    )
    if absent:
        print("sparkenv: the profile names but the base lacks: " + ", ".join(absent))
    return 0


def compare(path):
    with open(path, encoding="utf-8") as fh:
        before = json.load(fh)
    now = _installed()
    replaced, moved = [], []
    for name, versions in sorted(before["installed"].items()):
        after = now.get(name, [])
        if after == versions:
            continue
        line = f"{name} {'/'.join(versions)} -> {'/'.join(after) or 'removed'}"
        (replaced if name in before["provided"] else moved).append(line)
    for line in moved:
        print(f"sparkenv: note: a package of the base changed: {line}")
    if replaced:
        for line in replaced:
            print(f"sparkenv: G9 FAIL: a package the base provides was replaced: {line}", file=sys.stderr)
        print(
            "sparkenv: the lock must not carry what the base provides: re-lock with `sparkenv lock` for this "
            "profile, or drop these pins",
            file=sys.stderr,
        )
        return 1
    print(f"sparkenv: the base's {len(before['provided'])} provided packages are untouched")
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "snapshot":
        return snapshot(argv[1], argv[2:])
    if len(argv) == 2 and argv[0] == "compare":
        return compare(argv[1])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
