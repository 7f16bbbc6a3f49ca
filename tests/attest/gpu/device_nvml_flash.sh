#!/bin/bash
# sparkenv attest on the GPU machine, through the real command: a model that asked for SDPA while the
# flash-attn stand-in (flash_standin.cu, standin/flash_attn) ran, then the same model without it; a model whose
# GEMMs a Marlin stand-in serves (marlin_standin.cu); NVML's record of a CUDA program with no torch (busy.cu) and
# of two workloads that never reach the GPU. BUILT=DIR: the three builds made beforehand (else nvcc builds them
# here); CASES="name …": only these. Records to $OUT/attest-b.tar.gz.
set -u
cd "$(dirname "$0")"
HERE=$PWD
ROOT=$(cd ../../.. && pwd)
W=$(mktemp -d)
B=${BUILT:-$W}
log() { echo "== $*" | tee -a "$W/log.txt"; }
log "$(nvidia-smi -L) $(nvcc --version | tail -1)"
[ -f "$B/libflash_standin.so" ] || nvcc -shared -Xcompiler -fPIC -gencode arch=compute_90,code=sm_90 \
    -o "$B/libflash_standin.so" flash_standin.cu
[ -x "$B/busy" ] || nvcc -gencode arch=compute_90,code=sm_90 -o "$B/busy" busy.cu
[ -f "$B/libmarlin_standin.so" ] || nvcc -shared -Xcompiler -fPIC -gencode arch=compute_90,code=sm_90 \
    -o "$B/libmarlin_standin.so" marlin_standin.cu
export FLASH_STANDIN_LIB=$B/libflash_standin.so
attest() {  # NAME EXTRA_PYTHONPATH ARGS...: one `sparkenv attest` run, its report as text, JSON and HTML
    local name=$1 extra=$2 t0=$SECONDS
    shift 2
    [[ -z "${CASES:-}" || " $CASES " == *" $name "* ]] || return 0
    mkdir -p "$W/$name"
    (cd "$ROOT" && PYTHONPATH="$ROOT${extra:+:$extra}" timeout 150 python3 -m sparkenv attest --dir "$W/$name" \
        --report "$W/$name.json" --html "$W/$name.html" "$@") >"$W/$name.txt" 2>&1
    log "$name rc=$? wall=$((SECONDS - t0))s"
    grep -E '^G[0-9]+ ' "$W/$name.txt" | tee -a "$W/log.txt"
}
attest flash-attn-ran "$HERE/standin" --seconds 10 --attention sdpa -- python3 tests/attest/gpu/flash_case.py 16
attest flash-sdpa "" --seconds 10 --attention sdpa -- python3 tests/attest/gpu/flash_case.py 16
attest marlin "" --seconds 6 -- python3 tests/attest/gpu/marlin_case.py "$B/libmarlin_standin.so" 10
attest nvml-busy "" --seconds 5 -- "$B/busy" 10 512
attest nvml-numpy "" --seconds 5 -- python3 tests/attest/gpu/cpu_case.py numpy 10
attest nvml-torch-cpu "" --seconds 5 -- python3 tests/attest/gpu/cpu_case.py torch 10
cp "$B/libflash_standin.so" "$B/libmarlin_standin.so" "$W/"
tar -C "$W" -czf "$OUT/attest-b.tar.gz" . && log "packed $(du -sh "$OUT/attest-b.tar.gz")"
