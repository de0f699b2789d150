#!/usr/bin/env bash
# Stops the test cluster: the kubelet first, then every pod sandbox through the CRI (so the CNI plugin
# releases each pod's network), then the other components by their recorded pids (never by name).
#   down.sh [--wipe]   --wipe also forgets the cluster: etcd data, PKI, containerd and kubelet state, bridge.
# The build caches and binaries stay.
set -euo pipefail
. "$(dirname "$0")/common.sh"
wipe=0; [ "${1:-}" = "--wipe" ] && wipe=1
SOCK=$RUN/containerd/containerd.sock

stop() { # name: SIGTERM, SIGKILL after 10 s
  local f=$RUN/$1.pid
  [ -f "$f" ] || return 0
  local pid; pid=$(cat "$f")
  if alive "$1"; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do alive "$1" || break; sleep 0.1; done
    alive "$1" && kill -9 "$pid" 2>/dev/null || true
    log "stopped $1 ($pid)"
  fi
  rm -f "$f"
}

stop kueue
for n in trainer training-operator jobset; do stop "$n"; done
stop kubelet
if alive containerd; then
  crictl --runtime-endpoint "unix://$SOCK" --timeout 30s rmp --all --force >/dev/null 2>&1 || true
  # whatever the CRI could not remove: tasks of containerd's k8s.io namespace
  for t in $(ctr --address "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
    ctr --address "$SOCK" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
  done
fi
stop kube-proxy
[ -f "$RUN/kube-proxy.yaml" ] && kube-proxy --cleanup --config "$RUN/kube-proxy.yaml" >/dev/null 2>&1 || true
for n in containerd coredns kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$n"; done
# Volumes the kubelet mounted (secrets, projected tokens) and the sandboxes' mounts, deepest first.
awk -v root="$RUN/" 'index($2, root) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
  umount -l "$m" 2>/dev/null || true
done
rm -rf "$RUN/ports"
if [ "$wipe" = 1 ]; then
  rm -rf "$RUN"
  if ip link show "$TG_K8S_BRIDGE" >/dev/null 2>&1; then ip link delete "$TG_K8S_BRIDGE"; fi
  while iptables -C INPUT -d "$TG_K8S_BRIDGE_IP" ! -s "$TG_K8S_POD_CIDR" -m addrtype ! --src-type LOCAL -j DROP 2>/dev/null; do
    iptables -D INPUT -d "$TG_K8S_BRIDGE_IP" ! -s "$TG_K8S_POD_CIDR" -m addrtype ! --src-type LOCAL -j DROP
  done
  log "cluster state wiped ($RUN)"
fi
exit 0
