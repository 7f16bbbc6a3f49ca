#!/bin/bash
# gate --attest 20 in front of a SECONDS (default 60) bf16 workload against the same workload unwatched,
# alternated PAIRS times (plain, attest, plain, attest …); throughput logs and records to $OUT/attest-ab.tar.gz.
set -u
S=${1:-60}
PAIRS=${2:-2}
cd "$(dirname "$0")"
ROOT=$(cd ../../.. && pwd)
W=$(mktemp -d)
for i in $(seq "$PAIRS"); do
    t0=$SECONDS; python3 bf16_workload.py "$S" "$W/plain-$i.txt" >>"$W/log.txt" 2>&1; echo "plain-$i rc=$? wall=$((SECONDS - t0))s" | tee -a "$W/log.txt"
    t0=$SECONDS
    (cd "$ROOT" && SPARKENV_ATTEST_DIR="$W/attest-$i" python3 -m sparkenv gate --deadline 10 --attest 20 -- \
        python3 tests/attest/gpu/bf16_workload.py "$S" "$W/attest-$i.txt") >>"$W/log.txt" 2>&1
    echo "attest-$i rc=$? wall=$((SECONDS - t0))s" | tee -a "$W/log.txt"
done
python3 - "$W" "$S" "$PAIRS" <<'PY' | tee -a "$W/log.txt"
import sys
w, s, pairs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
def rate(path, lo, hi):
    pts = [tuple(map(float, l.split())) for l in open(path)]
    inside = [p for p in pts if lo <= p[0] <= hi]
    return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])
for i in range(1, pairs + 1):
    for name in (f"plain-{i}", f"attest-{i}"):
        p = f"{w}/{name}.txt"
        during, after = rate(p, 2, 18), rate(p, 30, s - 2)
        print(name, "products/s during 2-18 s: %.1f, after the window 30-%g s: %.1f" % (during, s - 2, after))
PY
tar -C "$W" -czf "$OUT/attest-ab.tar.gz" .
tail -40 "$W/log.txt"
