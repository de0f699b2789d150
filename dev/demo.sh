#!/usr/bin/env bash
# Quickstart command 1: installs the venv (dev/setup.sh, nothing else), then runs a PyTorch training
# script whose learning rate climbs too high under `trainguard run`, and shows TrainGuard stopping it:
# the rule that fired and why, the verdict table, and where the HTML report is.
set -euo pipefail
cd "$(dirname "$0")/.."
dev/setup.sh
mkdir -p trainguard-runs
outcome=trainguard-runs/demo-outcome.json
echo
echo "==> trainguard run -- python examples/pytorch_diverging.py"
echo "    (a regression MLP whose learning-rate warm-up overshoots: the loss explodes to inf/NaN within 200 steps;"
echo "     left alone it would train on NaN for 20,000 steps)"
echo
set +e
.venv/bin/trainguard run --json "$outcome" -- .venv/bin/python examples/pytorch_diverging.py
rc=$?
set -e
echo
if [ "$rc" -ne 3 ]; then
  echo "demo: expected TrainGuard to stop the run (exit status 3), got exit status $rc" >&2
  exit 1
fi
.venv/bin/python - "$outcome" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
stop = doc["stop"]
print(f"==> TrainGuard stopped the run at step {stop['step']} with exit status {doc['exit_code']}: rule {doc['stopped_by']}")
print(f"    {stop['message']}")
how = (
    f"got SIGTERM {'and then SIGKILL ' if doc['killed'] else ''}and exited"
    if doc["sigterm_sent"]
    else "saw should_stop(), saved its work and left by itself"
)
print(f"    the command {how} {stop['latency_to_exit_seconds']} s after the verdict; "
      f"last step evaluated: {doc['last_step']}")
if stop.get("earlier_sign"):
    sign = stop["earlier_sign"]
    print(f"==> the earlier sign, at step {sign['step']}: rule {sign['rule']} ({sign['severity']})")
    print(f"    {sign['message']}")
print(f"==> HTML report (plots with the finding marked): {doc['report']}")
print(f"    outcome as JSON: {sys.argv[1]}; run data: {doc['run_uri']}")
PY
