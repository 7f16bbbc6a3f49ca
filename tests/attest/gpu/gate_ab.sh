#!/bin/bash
# gate --attest 20 in front of a 60 s bf16 workload against the same workload unwatched, alternated
# (plain, attest, plain, attest); throughput logs and records to $OUT/attest-ab.tar.gz.
set -u
cd "$(dirname "$0")"
ROOT=$(cd ../../.. && pwd)
W=$(mktemp -d)
for i in 1 2; do
    t0=$SECONDS; python3 bf16_workload.py 60 "$W/plain-$i.txt" >>"$W/log.txt" 2>&1; echo "plain-$i rc=$? wall=$((SECONDS - t0))s" | tee -a "$W/log.txt"
    t0=$SECONDS
    (cd "$ROOT" && SPARKENV_ATTEST_DIR="$W/attest-$i" python3 -m sparkenv gate --deadline 10 --attest 20 -- \
        python3 tests/attest/gpu/bf16_workload.py 60 "$W/attest-$i.txt") >>"$W/log.txt" 2>&1
    echo "attest-$i rc=$? wall=$((SECONDS - t0))s" | tee -a "$W/log.txt"
done
python3 - "$W" <<'PY' | tee -a "$W/log.txt"
import sys, glob
w = sys.argv[1]
def rate(path, lo, hi):
    pts = [tuple(map(float, l.split())) for l in open(path)]
    inside = [p for p in pts if lo <= p[0] <= hi]
    return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])
for name in ("plain-1", "attest-1", "plain-2", "attest-2"):
    p = f"{w}/{name}.txt"
    print(name, "products/s during 2-18 s: %.1f, after the window 30-58 s: %.1f" % (rate(p, 2, 18), rate(p, 30, 58)))
PY
tar -C "$W" -czf "$OUT/attest-ab.tar.gz" .
tail -40 "$W/log.txt"
