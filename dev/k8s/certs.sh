#!/usr/bin/env bash
# A throwaway PKI (openssl) under $PKI: CA, serving certs, one client cert per component, SA keys.
# Idempotent: existing files are kept (`down --wipe` deletes them).
set -euo pipefail
. "$(dirname "$0")/common.sh"
mkdir -p "$PKI"; cd "$PKI"
[ -f ca.crt ] || openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
  -subj "/CN=trainguard-e2e-ca" 2>/dev/null
sign() { # name subject [server-SANs]
  local n=$1 subj=$2 san=${3:-}
  [ -f "$n.crt" ] && return 0
  openssl req -newkey rsa:2048 -nodes -keyout "$n.key" -out "$n.csr" -subj "$subj" 2>/dev/null
  { echo "basicConstraints=CA:FALSE"; echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [ -n "$san" ]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$san"
    else echo "extendedKeyUsage=clientAuth"; fi; } > "$n.ext"
  openssl x509 -req -in "$n.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$n.crt" -days 3650 \
    -extfile "$n.ext" 2>/dev/null
  rm -f "$n.csr" "$n.ext"
}
sign apiserver "/CN=kube-apiserver" "IP:$TG_K8S_BRIDGE_IP,IP:127.0.0.1,IP:$SERVICE_IP,DNS:localhost,DNS:kubernetes,\
DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
sign kubelet-serving "/CN=$TG_K8S_NODE" "IP:$TG_K8S_BRIDGE_IP,DNS:$TG_K8S_NODE"
sign admin "/O=system:masters/CN=trainguard-e2e-admin"
sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
sign controller-manager "/CN=system:kube-controller-manager"
sign scheduler "/CN=system:kube-scheduler"
sign kubelet "/O=system:nodes/CN=system:node:$TG_K8S_NODE"
sign kube-proxy "/CN=system:kube-proxy"
sign coredns "/CN=system:trainguard-e2e-coredns"
[ -f sa.key ] || { openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null; }
