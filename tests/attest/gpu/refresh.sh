#!/bin/bash
# The two cases whose records counted GPU-timeline annotations (Optimizer.step#…) as kernels, again with the
# probe that leaves them out; records to $OUT/attest-refresh.tar.gz.
set -u
cd "$(dirname "$0")"
W=$(mktemp -d)
PROBE=$(cd ../../../sparkenv/attest/inject && pwd)
for case in "cpu-op cpu_op_case.py 14" "train train_case.py 14 $W/train/crosscheck.json"; do
    set -- $case; name=$1; shift; mkdir -p "$W/$name"
    CUDA_CACHE_PATH=$(mktemp -d) CUDA_CACHE_MAXSIZE=4294967296 SPARKENV_ATTEST_DIR="$W/$name" SPARKENV_ATTEST_SECONDS=8 \
        SPARKENV_ATTEST_MARKERS="scaled_dot_product|flash|attention|sdpa|cudnn" PYTHONPATH="$PROBE" \
        timeout 120 python3 "$@" >>"$W/log.txt" 2>&1; echo "$name rc=$?" | tee -a "$W/log.txt"
done
python3 -c "import json; d=json.load(open('$W/train/crosscheck.json')); print(d['torch_self_device_us'], d['torch_table_footer'], d['summary'])" | tee -a "$W/log.txt"
tar -C "$W" -czf "$OUT/attest-refresh.tar.gz" .
