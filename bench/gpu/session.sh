#!/usr/bin/env bash
# There (the lent GPU machine, which starts bare), from the repository root, in ONE device call:
#   command "bash bench/gpu/session.sh", carry [".whl"] (made here by bench/gpu/wheels.sh), timeout_s 540.
# It installs the carried wheels, then runs the CUDA test file (every solver on CUDA beside the CPU) and
# bench.system.gpu_paths at 1M rows (every method, CUDA and CPU) and at 10M (CUDA; the CPU for linear). Results and
# logs go to $OUT (7 files; at most 8 come back). About 8 minutes with the machine's start (2026-11-29, one H200).
# The stacks of a bench stopped by its timeout are ended here by name; the device call's own command line
# ("bash bench/gpu/session.sh") matches neither name, where a `pkill -f` typed in the call itself would end the call.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu-session}
mkdir -p "$OUT"
stop_stacks() { pkill -f "[a]pp.launcher"; pkill -f "[c]elery -A worker.celery_app"; pkill -f "[a]pp.serve"; sleep 2; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
timeout 110 python3 -m pytest -o addopts="" -q -p no:cacheprovider --timeout 60 tests/solvers/test_cuda_path.py \
  > "$OUT/cuda_tests.log" 2>&1
tail -3 "$OUT/cuda_tests.log"
timeout 170 python3 -m bench.system.gpu_paths --rows 1000000 --iterations 40 \
  --methods linear mlp ssl_alm alm ssw ghost --output gpu_paths_1m | tail -16
stop_stacks
timeout 200 python3 -m bench.system.gpu_paths --rows 10000000 --iterations 20 --methods linear mlp ssl_alm ssw \
  --cpu-methods linear --output gpu_paths_10m | tail -9
stop_stacks
