#!/usr/bin/env bash
# Creates .venv-smdebug with the peer we benchmark against and read fixtures from: smdebug 1.0.34.
# Its wheel misses requests/pandas/psutil and breaks on numpy>=2.3 (shared/research/smdebug.md §7).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-smdebug/bin/python ] || ! .venv-smdebug/bin/python -c "import smdebug.pytorch" 2>/dev/null; then
  python3 -m venv .venv-smdebug
  .venv-smdebug/bin/pip install -q --disable-pip-version-check \
    smdebug==1.0.34 torch==2.13.0 requests pandas psutil "numpy<2.3"
fi
echo .venv-smdebug/bin/python
