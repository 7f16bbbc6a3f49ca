"""Runs inside the image during `sparkenv build` (standard library only, any Python >= 3.8).

    base_check.py snapshot FILE NAME...   record every installed distribution (NAMEs: the base provides)
    base_check.py compare FILE            print what changed since, as one facts line; exit 1 when a
                                          provided distribution changed, so the build stops at this layer

The lock's stages install with --no-deps, but a stale or hand-edited lock can still carry a torch or a
triton. This script only reports facts: the line `sparkenv-base-check {json}` (provided, replaced,
moved). What they mean, in words and with the fix, is rules/g9.py's (Stage.IMAGE): the build engine
reads the line from the step's log (facts/image.py) and asks the registry. The exit status is only
what stops the layer.
"""

import json
import re
import sys
from importlib import metadata

MARK = "sparkenv-base-check "


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
        if after != versions:
            change = {"name": name, "before": versions, "after": after}
            (replaced if name in before["provided"] else moved).append(change)
    facts = {"provided": before["provided"], "replaced": replaced, "moved": moved}
    print(MARK + json.dumps(facts, sort_keys=True), flush=True)
    return 1 if replaced else 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "snapshot":
        return snapshot(argv[1], argv[2:])
    if len(argv) == 2 and argv[0] == "compare":
        return compare(argv[1])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
