#!/usr/bin/env bash
# Starts Kueue $KUEUE_VERSION on the running test cluster (idempotent): its CRDs from the Go module, then the
# controller manager as a host process with the admin kubeconfig. The integrations of every kind TrainGuard
# attaches to: batch/Job, JobSet, PyTorchJob and TrainJob (start it after `dev/k8s.sh controllers`, which
# installs the last three's CRDs: Kueue sets an integration up only once its CRD is served, and looks for a
# missing one again with a backoff of up to 2 minutes). No admission webhooks are registered (the operator
# and the tests create queued workloads suspended themselves; a queued TrainJob also carries the runtime
# patch of manager `kueue.x-k8s.io/manager` Kueue's webhook would add, which Kueue fills on admission), the visibility
# server is off, leader election too. Health on 127.0.0.1; the webhook and metrics servers Kueue always
# runs get a certificate of the test CA for 127.0.0.1.
set -euo pipefail
. "$(dirname "$0")/common.sh"
command -v kueue >/dev/null || die "kueue is missing: run dev/k8s.sh build --kueue"
alive kube-apiserver || die "the cluster is not up: run dev/k8s.sh up"
if alive kueue; then exit 0; fi
src=$GOMODCACHE/sigs.k8s.io/kueue@$KUEUE_VERSION/config/components/crd/bases
[ -d "$src" ] || die "$src is missing: run dev/k8s.sh build --kueue"
kubectl apply --server-side --force-conflicts -f "$src" >/dev/null
established "$src"

K=$RUN/kueue; mkdir -p "$K/certs"
if [ ! -f "$K/certs/tls.crt" ]; then
  openssl req -newkey rsa:2048 -nodes -keyout "$K/certs/tls.key" -out "$K/tls.csr" -subj "/CN=kueue-webhook" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n' > "$K/tls.ext"
  openssl x509 -req -in "$K/tls.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 3650 \
    -extfile "$K/tls.ext" -out "$K/certs/tls.crt" 2>/dev/null
  rm -f "$K/tls.csr" "$K/tls.ext"
fi
HEALTH=$(free_port)
cat > "$K/config.yaml" <<YAML
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health: {healthProbeBindAddress: "127.0.0.1:$HEALTH"}
metrics: {bindAddress: "0"}
webhook: {host: 127.0.0.1, port: $(free_port), certDir: "$K/certs"}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
integrations:
  frameworks: ["batch/job", "jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob", "trainer.kubeflow.org/trainjob"]
YAML
# Without its internal certificate management Kueue reads its metrics certificate from the fixed path
# /etc/kueue/metrics/certs: give it one in a private mount namespace, over an overlay of /etc, so the
# host's /etc stays untouched.
mkdir -p "$K/etc-upper" "$K/etc-work"
unshare --mount --propagation private -- sh -c '
  set -e
  mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/etc-upper,workdir=$1/etc-work" /etc
  mkdir -p /etc/kueue/metrics/certs
  cp "$1/certs/tls.crt" "$1/certs/tls.key" /etc/kueue/metrics/certs/
  exec kueue --config "$1/config.yaml" --feature-gates VisibilityOnDemand=false' kueue "$K" >> "$RUN/kueue.log" 2>&1 &
echo $! > "$RUN/kueue.pid"
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$HEALTH/readyz" >/dev/null 2>&1 && { log "Kueue $KUEUE_VERSION ready"; exit 0; }
  alive kueue || { tail -20 "$RUN/kueue.log" >&2; die "kueue exited; its log is $RUN/kueue.log"; }
  sleep 0.2
done
tail -20 "$RUN/kueue.log" >&2; die "kueue not ready after 60 s; its log is $RUN/kueue.log"
