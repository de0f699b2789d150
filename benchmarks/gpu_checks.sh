#!/usr/bin/env bash
# Every GPU check of the PyTorch hook in one run, for a bare machine with one H100 or H200 (< 5 minutes).
#
#   bash benchmarks/gpu_checks.sh        # from the repository root; outputs in $OUT if set, else ./gpu-checks
#
# Needs a Python with torch (CUDA) and triton, pydantic, numpy and pytest (PYTHON, default python3);
# trainguard itself is taken from this checkout. Each check writes its own file, and a summary line
# per check goes to summary.txt:
#   env.txt       GPU, driver, torch/triton versions
#   tests.txt     the CUDA cases of tests/capture (statistics, multi_stats, the hook's paths and columns)
#   sync.txt      20 steady-state steps with the hook under torch.cuda.set_sync_debug_mode("error")
#   kernels.txt   CUDA kernels the hook adds per saved step, Tier-0 and Tier-1 apart (torch.profiler)
#   profile.txt   multi_stats under each kernel size on the same tensors; single steps timed plain and
#                 hooked; where a saved step's host and device time goes
#   profile_large.txt  the 0.94B GPT's plain, Tier-0 and Tier-1 steps timed and their kernels by device time
#   host_time.txt the CPU proxy of the hook's host time per saved step (benchmarks/hook_host_time.py), on
#                 this machine's host: to set beside the profile's host times of the same steps
#   overhead.md   the overhead table: GPT 110M and 0.94B, no hook vs save_interval 10 and every step
# The script goes on after a failing check; its exit status is the number of checks that failed.
set -u
cd "$(dirname "$0")/.."
OUT_DIR=${OUT:-gpu-checks}
PY=${PYTHON:-python3}
mkdir -p "$OUT_DIR"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" TRAINGUARD_E2E=skip
export PYTHONUNBUFFERED=1  # a check cut off by its timeout keeps what it printed
failed=0

check() {  # check NAME FILE TIMEOUT_S COMMAND...
    local name=$1 file=$2 limit=$3
    shift 3
    local start=$SECONDS
    timeout "$limit" "$@" >"$OUT_DIR/$file" 2>&1
    local rc=$?
    [ $rc -ne 0 ] && failed=$((failed + 1))
    echo "$name: exit $rc in $((SECONDS - start)) s ($file): $(grep -v '^\s*$' "$OUT_DIR/$file" | tail -1)" \
        | tee -a "$OUT_DIR/summary.txt"
}

: >"$OUT_DIR/summary.txt"
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    "$PY" -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)'
    # the optional C kernel, which the CPU legs of the path tests take
    "$PY" setup.py build_ext --inplace -q 2>&1 | tail -3 || echo "the C kernel was not built"
} >"$OUT_DIR/env.txt" 2>&1
check "CUDA tests" tests.txt 180 "$PY" -m pytest -q -p no:cacheprovider -W ignore::pytest.PytestConfigWarning \
    -k "cuda or gpu" \
    tests/capture/test_torch_statistics.py tests/capture/test_multi_stats.py \
    tests/capture/test_torch_hook_paths.py tests/capture/test_torch_hook_run.py
check "sync" sync.txt 60 "$PY" -m benchmarks.hook_gpu_checks sync --steps 20
check "kernels" kernels.txt 90 "$PY" -m benchmarks.hook_gpu_checks kernels --steps 10
check "profile" profile.txt 200 "$PY" -m benchmarks.hook_gpu_checks profile --steps 10
check "profile, 0.94B GPT" profile_large.txt 120 "$PY" -m benchmarks.hook_gpu_checks profile-large --steps 6
check "host time" host_time.txt 60 "$PY" -m benchmarks.hook_host_time --reps 2 --steps 30
check "overhead" overhead.md 260 "$PY" -m benchmarks.hook_overhead_gpu --models gpt,gpt1b --reps 2 \
    --gpt-steps 60 --gpt1b-steps 20
exit $failed
