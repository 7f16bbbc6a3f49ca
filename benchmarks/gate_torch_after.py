"""The torch workload behind the gate against the workload alone, measured directly: the workload alone
and, per sparkenv tree, behind that tree's gate (`gate -- W`, exec; started as a built image starts it,
through the tree's own sparkenv/image/sparkenv.sh, as benchmarks/gate_start.py does), interleaved, each
stamped: its first line, `import torch` done, the first CUDA tensor synchronized, and the process's end
(CPU of the whole run beside). `--diagnose` adds, for the first tree, the workload alone with the tree
on PYTHONPATH and right after a `gate` that exited (no exec).

  P=/opt/torch/.venv/bin/python
  $P benchmarks/gate_torch_after.py --python $P --tree after=<checkout> --tree before=<other> --runs 10

Standard library only; the tree's sparkenv must import with --python, and torch with CUDA be there.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from gate_start import image_launcher  # this folder is first on sys.path when run as a script

WORKLOAD = r"""import time
T = {"first line": time.clock_gettime(time.CLOCK_MONOTONIC)}
import torch
T["import torch"] = time.clock_gettime(time.CLOCK_MONOTONIC)
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
T["first CUDA tensor"] = time.clock_gettime(time.CLOCK_MONOTONIC)
import json, os
with open(os.environ["GATE_TORCH_OUT"], "w") as fh:
    json.dump(T, fh)
"""


def timed(argv: list[Any], env: dict[str, str], cwd: str) -> dict[str, float]:
    out = tempfile.mktemp(prefix="gate-torch-", dir=cwd)
    cache = tempfile.mkdtemp(prefix="gate-torch-cache-")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    spawn = time.clock_gettime(time.CLOCK_MONOTONIC)
    full = {**os.environ, **env, "GATE_TORCH_OUT": out, "SPARKENV_CACHE_DIR": cache}
    for cmd in argv if isinstance(argv[0], list) else [argv]:
        subprocess.run(cmd, capture_output=True, env=full, cwd=cwd, timeout=300, check=False)
    back = time.clock_gettime(time.CLOCK_MONOTONIC)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(cache, ignore_errors=True)
    got = {"total": back - spawn, "CPU": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime}
    try:
        with open(out) as fh:
            t = json.load(fh)
        os.unlink(out)
    except OSError:
        return got
    got["until the first line"] = t["first line"] - spawn
    got["import torch"] = t["import torch"] - t["first line"]
    got["first CUDA tensor"] = t["first CUDA tensor"] - t["import torch"]
    got["exit"] = back - t["first CUDA tensor"]
    return got


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument(
        "--tree", action="append", required=True, metavar="NAME=DIR", help="a sparkenv checkout; repeat"
    )
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--diagnose", action="store_true", help="the rows of the fourth session too")
    args = parser.parse_args()
    py = args.python
    trees = [(n, os.path.abspath(d)) for n, _, d in (t.partition("=") for t in args.tree)]
    cwd = tempfile.mkdtemp(prefix="gate-torch-cwd-")  # neutral: no sparkenv of its own on sys.path
    w = os.path.join(cwd, "torch_stamped.py")
    with open(w, "w") as fh:
        fh.write(WORKLOAD)
    rows: dict[str, tuple[list[Any], dict[str, str]]] = {"torch alone": ([py, w], {})}
    for name, tree in trees:
        gate = [image_launcher(py, tree, os.path.join(cwd, f"sparkenv-{name}.sh")), "gate", "-q"]
        rows[f"gate ({name}) -- torch (exec)"] = ([*gate, "--", py, w], {})
    if args.diagnose:
        tree = trees[0][1]
        module = [py, "-m", "sparkenv", "gate", "-q"]
        rows["torch alone, the tree on PYTHONPATH"] = ([py, w], {"PYTHONPATH": tree})
        rows["torch right after `gate` exited (no exec)"] = ([module, [py, w]], {"PYTHONPATH": tree})
    names = list(rows)
    runs: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    for r in range(-1, args.runs):
        shift = r % len(names)
        for n in names[shift:] + names[:shift]:
            got = timed(*rows[n], cwd)
            if r >= 0:
                runs[n].append(got)
    shutil.rmtree(cwd, ignore_errors=True)
    for n in names:
        keys = [k for k in runs[n][0] if all(k in g for g in runs[n])]
        print(f"{n} ({len(runs[n])} runs), medians, s:")
        for k in keys:
            print(f"  {statistics.median(g[k] for g in runs[n]):8.4f}  {k}")
    alone = statistics.median(g["total"] for g in runs["torch alone"])
    for name, _tree in trees:
        behind = runs[f"gate ({name}) -- torch (exec)"]
        ratio = statistics.median(g["total"] for g in behind) / alone
        paired = statistics.median(
            b["total"] - a["total"] for a, b in zip(runs["torch alone"], behind, strict=True)
        )
        print(f"gate ({name}) -- torch / torch alone: {ratio:.3f} (medians); paired {paired:+.3f} s")
    print(json.dumps(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
