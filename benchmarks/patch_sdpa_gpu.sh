#!/usr/bin/env bash
# Driver for benchmarks/patch_sdpa_gpu.py on the GPU machine (no network): wheels come from .whl/.
# Writes $OUT/patch_sdpa_gpu.log (everything) and $OUT/patch_sdpa_gpu.jsonl (one result per scenario).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/sdpa-proof; mkdir -p $W
LOG=$OUT/patch_sdpa_gpu.log
exec > >(tee -a "$LOG") 2>&1
echo "== host"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -V; which python3
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -3
export PYTHONPATH=/tmp/site:$PWD HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 UNSLOTH_DISABLE_STATISTICS=1 PYTHONUNBUFFERED=1
python3 -c "import torch, transformers, trl, peft; print('torch', torch.__version__, 'transformers', transformers.__version__, 'trl', trl.__version__, 'peft', peft.__version__)"
echo "== setup"; python3 benchmarks/patch_sdpa_gpu.py setup $W || exit 1
PY=$(python3 -c 'import sys; print(sys.executable)')
echo "== sparkenv patch sdpa --install $PY"; python3 -m sparkenv patch sdpa --install "$PY"; echo "rc=$?"
run() {  # name, fake-fa (1/0), extra env ...
  local name=$1 fa=$2; shift 2
  local pp=$PYTHONPATH; [ "$fa" = 1 ] && pp=$W/fakefa:$pp
  # output straight into $OUT, so a scenario that hangs still leaves its lines behind
  # SIGINT first: a hung `import unsloth` then prints a traceback that says where it hung
  (cd $W && env PYTHONPATH=$pp "$@" timeout -s INT -k 10 ${SCENARIO_TIMEOUT:-150} python3 $OLDPWD/benchmarks/patch_sdpa_gpu.py scenario $name $W > $OUT/$name.out 2>&1)
  echo "== $name rc=$? (last lines)"; grep -v '^RESULT ' $OUT/$name.out | tail -8
  grep '^RESULT ' $OUT/$name.out | sed 's/^RESULT //' | tee -a $OUT/patch_sdpa_gpu.jsonl
}
# One at a time: a 2026-11-29 run of all six in parallel (420 s each) returned nothing in 540 s.
ALL="pth-off,1,SPARKENV_SDPA=0 one-flag,1,SPARKENV_SDPA=0 force-before,1,SPARKENV_SDPA=0 \
force-after,1,SPARKENV_SDPA=0 pth,1 pth-nofa,0"
for spec in ${SCENARIOS:-$ALL}; do run ${spec//,/ }; done  # SCENARIOS="one-flag,1,SPARKENV_SDPA=0 pth,1"
echo "== sparkenv patch sdpa --uninstall"; python3 -m sparkenv patch sdpa --uninstall "$PY"; echo "rc=$?"
ls $(dirname $(dirname $PY))/lib/python3*/site-packages | grep -i sparkenv || echo "no sparkenv file left in site-packages"
