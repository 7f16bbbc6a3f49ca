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
  (cd $W && env PYTHONPATH=$pp "$@" timeout 420 python3 $OLDPWD/benchmarks/patch_sdpa_gpu.py scenario $name $W > $W/$name.out 2>&1)
}
echo "== scenarios (in parallel)"
run one-flag 1 SPARKENV_SDPA=0 & run force-before 1 SPARKENV_SDPA=0 & run force-after 1 SPARKENV_SDPA=0 &
run pth 1 & run pth-off 1 SPARKENV_SDPA=0 & run pth-nofa 0 &
wait
for n in pth-off one-flag force-before force-after pth pth-nofa; do
  echo "== $n (last lines)"; grep -v '^RESULT ' $W/$n.out | tail -8
  grep '^RESULT ' $W/$n.out | sed 's/^RESULT //' | tee -a $OUT/patch_sdpa_gpu.jsonl
done
echo "== sparkenv patch sdpa --uninstall"; python3 -m sparkenv patch sdpa --uninstall "$PY"; echo "rc=$?"
ls $(dirname $(dirname $PY))/lib/python3*/site-packages | grep -i sparkenv || echo "no sparkenv file left in site-packages"
