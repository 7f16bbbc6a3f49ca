#!/bin/bash
# sparkenv attest's GPU cases, on the GPU machine (the device tool): each program runs with the probe loaded
# the way `sparkenv attest` loads it; records and logs go to $OUT/attest-gpu.tar.gz.
set -u
cd "$(dirname "$0")"
W=$(mktemp -d)
PROBE=$(cd ../../../sparkenv/attest/inject && pwd)
MARKERS="scaled_dot_product|flash|attention|sdpa|cudnn"
log() { echo "== $*" | tee -a "$W/log.txt"; }
attest() {  # NAME SECONDS CMD...: one case under the probe, with a fresh private JIT cache
    local name=$1 secs=$2; shift 2
    mkdir -p "$W/$name"
    local t0=$SECONDS
    CUDA_CACHE_PATH=$(mktemp -d) CUDA_CACHE_MAXSIZE=4294967296 SPARKENV_ATTEST_DIR="$W/$name" \
        SPARKENV_ATTEST_SECONDS="$secs" SPARKENV_ATTEST_MARKERS="$MARKERS" PYTHONPATH="$PROBE" \
        timeout 120 python3 "$@" >>"$W/log.txt" 2>&1
    log "$name rc=$? wall=$((SECONDS - t0))s"
}
log "$(nvidia-smi -L) $(nvcc --version | tail -1)"
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda, torch.cuda.get_device_capability())" >>"$W/log.txt" 2>&1
python3 -c "import torch; print(sorted(m for m in dir(torch._C._autograd._KinetoEvent) if not m.startswith(\"_\")))" >>"$W/log.txt" 2>&1
python3 -c "import flash_attn" >>"$W/log.txt" 2>&1 || log "flash_attn not importable"
for b in flash efficient cudnn math; do attest "sdpa-$b" 3 sdpa_case.py "$b" 6; done
nvcc -shared -Xcompiler -fPIC -gencode arch=compute_90,code=compute_90 -o "$W/libext_ptx.so" ext.cu && log built ptx
nvcc -shared -Xcompiler -fPIC -gencode arch=compute_90,code=sm_90 -o "$W/libext_sass.so" ext.cu && log built sass
cuobjdump -lptx -lelf "$W/libext_ptx.so" "$W/libext_sass.so" >>"$W/log.txt" 2>&1
attest ext-ptx 3 ext_case.py "$W/libext_ptx.so" 5
attest ext-sass 3 ext_case.py "$W/libext_sass.so" 5
attest cpu-op 8 cpu_op_case.py 14
attest train 8 train_case.py 14 "$W/train/crosscheck.json"
ls -la "$W"/*/ >>"$W/log.txt"
cp "$W"/libext_*.so "$W/ext-ptx/" 2>/dev/null
tar -C "$W" -czf "$OUT/attest-gpu.tar.gz" . && log "packed $(du -sh "$OUT/attest-gpu.tar.gz")"
cat "$W/log.txt" | grep -v Warning | tail -60
