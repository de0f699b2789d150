#!/usr/bin/env bash
# Builds the sdist and a wheel for this machine's Python, reproducibly, into dist/ (or OUT).
#
#   dev/build-dist.sh [OUT]
#
# The same commit gives byte-identical files on any machine with the same compiler: SOURCE_DATE_EPOCH
# defaults to the commit's time (wheel timestamps), the C kernel is compiled with the source path mapped
# to "." (no build directory in its debug info), and the sdist is repacked with sorted members, the
# commit's time and no owner (setuptools stamps its generated files with the current time). Release
# wheels for every Python and architecture come from cibuildwheel (.github/workflows/release.yml);
# this script is the same build for one interpreter. Needs `pip install build`; offline, with the build
# requirements already installed: BUILD_ARGS=--no-isolation dev/build-dist.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
export CFLAGS="${CFLAGS:-} -ffile-prefix-map=$PWD=."
rm -rf build ./*.egg-info
python -m build ${BUILD_ARGS:-} --outdir "$out" .
python - "$out" <<'PY'
"""Repack dist/*.tar.gz: sorted members, mtime SOURCE_DATE_EPOCH, no owner, gzip without a timestamp."""
import gzip, io, os, sys, tarfile
from pathlib import Path

epoch = int(os.environ["SOURCE_DATE_EPOCH"])
for path in Path(sys.argv[1]).glob("*.tar.gz"):
    with tarfile.open(path) as src:
        members = sorted(src.getmembers(), key=lambda m: m.name)
        data = {m.name: src.extractfile(m).read() for m in members if m.isfile()}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as dst:
        for m in members:
            m.mtime, m.uid, m.gid, m.uname, m.gname, m.pax_headers = epoch, 0, 0, "", "", {}
            dst.addfile(m, io.BytesIO(data[m.name]) if m.isfile() else None)
    with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=epoch, filename="") as gz:
        gz.write(raw.getvalue())
PY
ls -l "$out"
