#!/usr/bin/env bash
# Starts the test cluster (idempotent: what runs is left alone) and waits until the node is Ready:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, CoreDNS and kube-proxy as host processes,
#   containerd + runc + the CNI bridge plugin, and a kubelet: one real node named $TG_K8S_NODE.
# The API server, the node and DNS listen on the bridge's host address ($TG_K8S_BRIDGE_IP), which pods
# reach directly; everything else binds 127.0.0.1 on free ports. The bridge has no uplink and pod
# traffic is not forwarded, so nothing leaves the machine. Writes $RUN/env (KUBECONFIG and addresses).
set -euo pipefail
. "$(dirname "$0")/common.sh"
PAUSE_IMAGE=localhost/trainguard-e2e/pause:3.10.1

for b in "${K8S_BINARIES[@]}" coredns crictl etcd; do
  command -v "$b" >/dev/null || die "$b is missing: run dev/k8s.sh build"
done
for b in containerd runc ctr iptables; do
  command -v "$b" >/dev/null || die "$b is missing: run dev/k8s.sh install"
done
[ -x /usr/lib/cni/bridge ] || die "the CNI plugins are missing: run dev/k8s.sh install"
[ "$(id -u)" -eq 0 ] || die "up needs root (containerd, the kubelet and the bridge do)"

start() { # name command...: start in the background unless running; log and pid in $RUN
  local n=$1; shift
  if alive "$n"; then return 0; fi
  "$@" >> "$RUN/$n.log" 2>&1 &
  echo $! > "$RUN/$n.pid"
}
wait_for() { # name seconds command...: poll until the command succeeds; show the log if it never does
  local n=$1 limit=$2; shift 2
  local deadline=$(( $(date +%s) + limit ))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    "$@" >/dev/null 2>&1 && return 0
    alive "$n" || { tail -30 "$RUN/$n.log" >&2; die "$n exited; its log is $RUN/$n.log"; }
    sleep 0.2
  done
  tail -30 "$RUN/$n.log" >&2; die "$n not ready after $limit s; its log is $RUN/$n.log"
}
port_of() { # name: the port recorded for a component, or a new free one
  local f=$RUN/ports/$1
  if [ ! -s "$f" ]; then mkdir -p "$RUN/ports"; free_port "${2:-127.0.0.1}" > "$f"; fi
  cat "$f"
}
write() { # file: write stdin to file unless it already holds exactly that (kube-proxy exits when its config changes)
  local tmp; tmp=$(mktemp "$1.XXXXXX")
  cat > "$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1"; fi
}
kubeconfig() { # file user cert
  write "$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: trainguard-e2e
  cluster: {server: "https://$TG_K8S_BRIDGE_IP:$API_PORT", certificate-authority: "$PKI/ca.crt"}
users:
- name: $2
  user: {client-certificate: "$PKI/$3.crt", client-key: "$PKI/$3.key"}
contexts:
- name: trainguard-e2e
  context: {cluster: trainguard-e2e, user: $2, namespace: default}
current-context: trainguard-e2e
KC
}

t0=$(now)
"$(dirname "$0")/certs.sh"

# The node's bridge, made here (the CNI plugin reuses it) so the API server can bind its address first.
if ! ip link show "$TG_K8S_BRIDGE" >/dev/null 2>&1; then
  ip link add "$TG_K8S_BRIDGE" type bridge
fi
case "$(ip -4 addr show dev "$TG_K8S_BRIDGE")" in
  *"inet $TG_K8S_BRIDGE_IP/"*) ;;
  *) ip addr add "$TG_K8S_BRIDGE_IP/${TG_K8S_POD_CIDR#*/}" dev "$TG_K8S_BRIDGE" ;;
esac
ip link set "$TG_K8S_BRIDGE" up
# Only pods and this machine may talk to the bridge address (it is not routed, but be explicit).
if ! iptables -C INPUT -d "$TG_K8S_BRIDGE_IP" ! -s "$TG_K8S_POD_CIDR" -m addrtype ! --src-type LOCAL -j DROP 2>/dev/null; then
  iptables -I INPUT -d "$TG_K8S_BRIDGE_IP" ! -s "$TG_K8S_POD_CIDR" -m addrtype ! --src-type LOCAL -j DROP
fi

API_PORT=$(port_of apiserver "$TG_K8S_BRIDGE_IP")
ETCD_PORT=$(port_of etcd); ETCD_PEER_PORT=$(port_of etcd-peer)
kubeconfig "$RUN/admin.kubeconfig" admin admin
for c in controller-manager scheduler kubelet kube-proxy coredns; do kubeconfig "$RUN/$c.kubeconfig" "$c" "$c"; done

start etcd etcd --name trainguard-e2e --data-dir "$RUN/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "trainguard-e2e=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls "http://127.0.0.1:$(port_of etcd-metrics)" \
  --unsafe-no-fsync --quota-backend-bytes 4294967296 --log-level warn
wait_for etcd 30 etcdctl --endpoints "127.0.0.1:$ETCD_PORT" endpoint health
t_etcd=$(since "$t0")

# OwnerReferencesPermissionEnforcement is on as on OpenShift: setting blockOwnerDeletion on a child
# needs `update` on the owner's finalizers subresource.
start kube-apiserver kube-apiserver --bind-address "$TG_K8S_BRIDGE_IP" --advertise-address "$TG_K8S_BRIDGE_IP" \
  --secure-port "$API_PORT" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --authorization-mode Node,RBAC --client-ca-file "$PKI/ca.crt" \
  --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
  --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types InternalIP \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
  --service-cluster-ip-range "$TG_K8S_SERVICE_CIDR" --allow-privileged=true --profiling=false \
  --enable-admission-plugins NodeRestriction,OwnerReferencesPermissionEnforcement --v 1
wait_for kube-apiserver 120 kubectl get --raw /readyz
t_api=$(since "$t0")

start kube-controller-manager kube-controller-manager --bind-address 127.0.0.1 --secure-port "$(port_of controller-manager)" \
  --kubeconfig "$RUN/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$RUN/controller-manager.kubeconfig" \
  --authorization-kubeconfig "$RUN/controller-manager.kubeconfig" \
  --leader-elect=false --use-service-account-credentials=true \
  --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
  --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" --v 1
start kube-scheduler kube-scheduler --bind-address 127.0.0.1 --secure-port "$(port_of scheduler)" \
  --kubeconfig "$RUN/scheduler.kubeconfig" --authentication-kubeconfig "$RUN/scheduler.kubeconfig" \
  --authorization-kubeconfig "$RUN/scheduler.kubeconfig" --leader-elect=false --v 1

# CoreDNS reads Services and EndpointSlices with its own user.
kubectl apply -f - >/dev/null <<YAML
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:trainguard-e2e-coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:trainguard-e2e-coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:trainguard-e2e-coredns"}
subjects: [{kind: User, name: "system:trainguard-e2e-coredns", apiGroup: rbac.authorization.k8s.io}]
YAML
DNS_HEALTH=$(port_of coredns-health); DNS_READY=$(port_of coredns-ready)
write "$RUN/Corefile" <<CF
cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
    bind $TG_K8S_BRIDGE_IP
    errors
    health 127.0.0.1:$DNS_HEALTH
    ready 127.0.0.1:$DNS_READY
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $RUN/coredns.kubeconfig trainguard-e2e
        pods insecure
        ttl 5
    }
}
.:53 {
    bind $TG_K8S_BRIDGE_IP
    errors
}
CF
start coredns coredns -conf "$RUN/Corefile"

# containerd with its own root, state and socket; runc with cgroupfs (the host has cgroup v1, no systemd).
CTRD=$RUN/containerd
SOCK=$CTRD/containerd.sock
mkdir -p "$CTRD" "$RUN/cni/net.d" "$RUN/cni/ipam"
write "$CTRD/config.toml" <<TOML
version = 2
root = "$CTRD/root"
state = "$CTRD/state"
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$CTRD/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  netns_mounts_under_state_dir = true
  # Lowering an OOM score needs CAP_SYS_RESOURCE, which some VMs withhold even from root: keep every score
  # at or above containerd's own (the pause container would ask for -998 and fail to start).
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$RUN/cni/net.d"
TOML
write "$RUN/cni/net.d/10-trainguard-e2e.conflist" <<JSON
{"cniVersion": "0.4.0", "name": "trainguard-e2e", "plugins": [
  {"type": "bridge", "bridge": "$TG_K8S_BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$RUN/cni/ipam",
            "ranges": [[{"subnet": "$TG_K8S_POD_CIDR", "gateway": "$TG_K8S_BRIDGE_IP"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
start containerd containerd --config "$CTRD/config.toml"
wait_for containerd 30 ctr --address "$SOCK" version

# The pod sandbox image, built once from Kubernetes' own pause.c (no registry is reachable).
if ! ctr --address "$SOCK" -n k8s.io images ls -q | grep -x "$PAUSE_IMAGE" >/dev/null; then
  tar=$CACHE/pause-3.10.1.tar
  if [ ! -s "$tar" ]; then
    log "pause image from k8s.io/kubernetes@$K8S_VERSION build/pause/linux/pause.c"
    src=$GOMODCACHE/k8s.io/kubernetes@$K8S_VERSION/build/pause/linux/pause.c
    [ -f "$src" ] || die "$src is missing: run dev/k8s.sh build"
    tmp=$(mktemp -d)
    gcc -Os -static -DVERSION=v3.10.1 -o "$tmp/pause" "$src"
    strip "$tmp/pause"
    B=(buildah --storage-driver vfs --root "$CACHE/containers" --runroot "$CACHE/containers/run")
    c=$("${B[@]}" from scratch)
    "${B[@]}" copy "$c" "$tmp/pause" /pause >/dev/null
    "${B[@]}" config --entrypoint '["/pause"]' --user 65535:65535 "$c"
    "${B[@]}" commit --quiet "$c" "$PAUSE_IMAGE" >/dev/null
    "${B[@]}" rm "$c" >/dev/null
    "${B[@]}" push --quiet "$PAUSE_IMAGE" "docker-archive:$tar.part:$PAUSE_IMAGE"
    mv "$tar.part" "$tar"; rm -rf "$tmp"
  fi
  ctr --address "$SOCK" -n k8s.io images import "$tar" >/dev/null
fi

# The kubelet: cgroupfs driver, the node's address on the bridge, its state under $RUN.
KUBELET_PORT=$(port_of kubelet "$TG_K8S_BRIDGE_IP")
mkdir -p "$RUN/kubelet" "$RUN/pod-logs"
: > "$RUN/pod-resolv.conf"   # pods resolve cluster names only: nothing beyond the cluster DNS
write "$RUN/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $TG_K8S_BRIDGE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $(port_of kubelet-healthz)
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$SOCK
clusterDomain: cluster.local
clusterDNS: [$TG_K8S_BRIDGE_IP]
resolvConf: $RUN/pod-resolv.conf
podLogsDir: $RUN/pod-logs
volumePluginDir: $RUN/kubelet/volume-plugins
failSwapOn: false
staticPodPath: ""
shutdownGracePeriod: 0s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
serializeImagePulls: false
YAML
start kubelet kubelet --config "$RUN/kubelet.yaml" --kubeconfig "$RUN/kubelet.kubeconfig" \
  --root-dir "$RUN/kubelet" --cert-dir "$RUN/kubelet/pki" --hostname-override "$TG_K8S_NODE" \
  --node-ip "$TG_K8S_BRIDGE_IP" --v 1

write "$RUN/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $RUN/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: $TG_K8S_POD_CIDR
hostnameOverride: $TG_K8S_NODE
healthzBindAddress: 127.0.0.1:$(port_of kube-proxy-healthz)
metricsBindAddress: 127.0.0.1:$(port_of kube-proxy-metrics)
nodePortAddresses: [$TG_K8S_POD_CIDR]
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
start kube-proxy kube-proxy --config "$RUN/kube-proxy.yaml" --v 1

wait_for kube-controller-manager 60 curl -skf "https://127.0.0.1:$(port_of controller-manager)/healthz"
wait_for kube-scheduler 60 curl -skf "https://127.0.0.1:$(port_of scheduler)/healthz"
wait_for coredns 30 curl -sf "http://127.0.0.1:$DNS_READY/ready"
wait_for kube-proxy 60 curl -sf "http://127.0.0.1:$(port_of kube-proxy-healthz)/healthz"
wait_for kubelet 120 kubectl wait --for condition=Ready --timeout 2s "node/$TG_K8S_NODE"
wait_for kube-controller-manager 60 kubectl get serviceaccount default -n default
cat > "$RUN/env" <<ENV
KUBECONFIG=$RUN/admin.kubeconfig
TG_K8S_BRIDGE_IP=$TG_K8S_BRIDGE_IP
TG_K8S_NODE=$TG_K8S_NODE
TG_K8S_CONTAINERD_SOCKET=$SOCK
TG_K8S_RUN=$RUN
TG_K8S_API_PORT=$API_PORT
K8S_VERSION=$K8S_VERSION
ENV
printf 'cluster ready in %s s (etcd %s s, API server %s s)\n' "$(since "$t0")" "$t_etcd" "$t_api" >&2
for n in etcd kube-apiserver kube-controller-manager kube-scheduler coredns containerd kubelet kube-proxy; do
  printf '  %-24s pid %-7s RSS %s MiB\n' "$n" "$(cat "$RUN/$n.pid")" "$(( $(ps -o rss= -p "$(cat "$RUN/$n.pid")") / 1024 ))" >&2
done
echo "export KUBECONFIG=$RUN/admin.kubeconfig"
