#!/usr/bin/env bash
# Starts the workload controllers on the running test cluster (idempotent), after `build --controllers`:
#   JobSet $JOBSET_VERSION, Kubeflow training-operator $TRAINING_OPERATOR_VERSION (PyTorchJob only),
#   Kubeflow Trainer $TRAINER_VERSION (TrainJob, with the `torch-distributed` ClusterTrainingRuntime).
# CRDs, webhook configurations and the runtime come from the module zips in the Go module cache.
# Each controller runs as a host process with the admin kubeconfig, leader election off, health on
# 127.0.0.1, and serves its admission webhooks as it would in a cluster: each one's built-in certificate
# rotator (the same in all three) keeps its CA and serving certificate in a Secret of its namespace and
# injects the CA into its webhook configurations; a selector-less Service of the name the certificate is
# for sends the API server to the process through an EndpointSlice on the node's bridge address. The
# rotators expect the Secret mounted at /tmp/k8s-webhook-server/serving-certs, as a pod would: each
# process gets a private mount namespace with its own /tmp, and a helper copies the Secret's certificate
# there once the rotator wrote it. The webhooks keep their upstream failurePolicy (Fail); JobSet's
# defaulting one matters (Indexed completion mode, restart policy, DNS hostnames).
set -euo pipefail
. "$(dirname "$0")/common.sh"
for b in jobset training-operator trainer; do
  command -v "$b" >/dev/null || die "$b is missing: run dev/k8s.sh build --controllers"
done
alive kube-apiserver || die "the cluster is not up: run dev/k8s.sh up"
JS=$GOMODCACHE/sigs.k8s.io/jobset@$JOBSET_VERSION
TO=$GOMODCACHE/github.com/kubeflow/training-operator@$TRAINING_OPERATOR_VERSION
TR=$GOMODCACHE/github.com/kubeflow/trainer/v2@$TRAINER_VERSION
for d in "$JS" "$TO" "$TR"; do [ -d "$d" ] || die "$d is missing: run dev/k8s.sh build --controllers"; done

crds() { # files...: apply (server-side: some are large) and wait until served
  local f; for f in "$@"; do kubectl apply --server-side --force-conflicts -f "$f" >/dev/null; done
  established "$@"
}

webhooks() { # manifests name-of-Mutating name-of-Validating service namespace [resources...]
  # the module's webhook configurations, renamed as the rotator knows them, pointed at the Service;
  # only the webhooks for the given resources (all when none given); pod webhooks get the objectSelector
  # upstream's kustomize patch adds (only pods of a JobSet reach JobSet's)
  local edit
  edit=$(cat <<'PY'
import json, sys
mutating, validating, service, namespace, *resources = sys.argv[1:]
names = {"MutatingWebhookConfiguration": mutating, "ValidatingWebhookConfiguration": validating}
items = []
text, decoder, docs, at = sys.stdin.read(), json.JSONDecoder(), [], 0
while text[at:].strip():  # kubectl prints one JSON document per YAML document
    doc, at = decoder.raw_decode(text, len(text) - len(text[at:].lstrip()))
    docs.append(doc)
for doc in docs:
    if not names.get(doc["kind"]):
        continue
    hooks = []
    for hook in doc["webhooks"]:
        res = {r for rule in hook["rules"] for r in rule["resources"]}
        if resources and not res & set(resources):
            continue
        path = hook["clientConfig"]["service"]["path"]
        hook["clientConfig"] = {"service": {"name": service, "namespace": namespace, "port": 443, "path": path}}
        if res == {"pods"}:
            hook["objectSelector"] = {"matchExpressions": [{"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]}
        hooks.append(hook)
    doc["metadata"] = {"name": names[doc["kind"]]}
    doc["webhooks"] = hooks
    items.append(doc)
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
)
  kubectl create --dry-run=client -o json -f "$1" | python3 -c "$edit" "${@:2}" \
    | kubectl apply --server-side --force-conflicts -f - >/dev/null
}

endpoint() { # namespace service port secret: a selector-less Service whose one endpoint is the host process,
  # and the Secret the rotator fills (it must exist, as upstream's manifests create it empty)
  kubectl apply --server-side --force-conflicts -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $1}
---
apiVersion: v1
kind: Secret
metadata: {name: $4, namespace: $1}
---
apiVersion: v1
kind: Service
metadata: {name: $2, namespace: $1}
spec:
  ports: [{name: webhook, port: 443, targetPort: $3, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: $2-host
  namespace: $1
  labels: {kubernetes.io/service-name: $2}
addressType: IPv4
endpoints: [{addresses: ["$TG_K8S_BRIDGE_IP"], conditions: {ready: true}}]
ports: [{name: webhook, port: $3, protocol: TCP}]
YAML
}

host_process() { # name namespace secret health-port command...: run it with its private /tmp; wait until ready
  local name=$1 ns=$2 secret=$3 health=$4; shift 4
  unshare --mount --propagation private -- sh -c '
    set -e
    mount -t tmpfs -o mode=1777 tmpfs /tmp
    mkdir -p /tmp/k8s-webhook-server/serving-certs
    ns=$1 secret=$2; shift 2
    ( cd /tmp/k8s-webhook-server/serving-certs
      until kubectl get secret -n "$ns" "$secret" -o jsonpath="{.data.tls\.key}" 2>/dev/null | base64 -d > tls.key.new \
            && [ -s tls.key.new ] \
            && kubectl get secret -n "$ns" "$secret" -o jsonpath="{.data.tls\.crt}" | base64 -d > tls.crt.new \
            && [ -s tls.crt.new ]; do sleep 0.5; done
      mv tls.key.new tls.key; mv tls.crt.new tls.crt ) &
    exec "$@"' "$name" "$ns" "$secret" "$@" >> "$RUN/$name.log" 2>&1 &
  echo $! > "$RUN/$name.pid"
  local t0; t0=$(now)
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$health/readyz" >/dev/null 2>&1 && { log "$name ready in $(since "$t0") s"; return 0; }
    alive "$name" || { tail -20 "$RUN/$name.log" >&2; die "$name exited; its log is $RUN/$name.log"; }
    sleep 0.2
  done
  tail -20 "$RUN/$name.log" >&2; die "$name not ready after 120 s; its log is $RUN/$name.log"
}

start_jobset() {
  crds "$JS"/config/components/crd/bases/*.yaml
  local port health; port=$(free_port 0.0.0.0); health=$(free_port)
  endpoint jobset-system jobset-webhook-service "$port" jobset-webhook-server-cert
  webhooks "$JS/config/components/webhook/manifests.yaml" jobset-mutating-webhook-configuration \
    jobset-validating-webhook-configuration jobset-webhook-service jobset-system
  mkdir -p "$RUN/jobset"
  cat > "$RUN/jobset/config.yaml" <<YAML
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
health: {healthProbeBindAddress: "127.0.0.1:$health"}
metrics: {bindAddress: "0"}
webhook: {port: $port}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: true}
YAML
  host_process jobset jobset-system jobset-webhook-server-cert "$health" jobset --config "$RUN/jobset/config.yaml" --zap-devel=false
}

start_training_operator() {
  crds "$TO/manifests/base/crds/kubeflow.org_pytorchjobs.yaml"
  local port health; port=$(free_port 0.0.0.0); health=$(free_port)
  endpoint kubeflow training-operator "$port" training-operator-webhook-cert
  webhooks "$TO/manifests/base/webhook/manifests.yaml" "" validator.training-operator.kubeflow.org \
    training-operator kubeflow pytorchjobs
  # The Workers of a PyTorchJob with a Master get an init container that waits until the Master's name
  # resolves: upstream's runs `nslookup` in alpine, which the node cannot pull; this one runs Python in the
  # project image (loaded into the node by `dev/k8s.sh image`), with upstream's name, tries and resources.
  mkdir -p "$RUN/training-operator"
  cat > "$RUN/training-operator/init-container.yaml" <<'YAML'
- name: init-pytorch
  image: {{.InitContainerImage}}
  imagePullPolicy: IfNotPresent
  resources:
    limits: {cpu: 100m, memory: 64Mi}
    requests: {cpu: 50m, memory: 10Mi}
  command:
  - python3
  - -c
  - |
    import socket, sys, time
    for _ in range(int(sys.argv[2])):
        try:
            socket.getaddrinfo(sys.argv[1], None)
            sys.exit(0)
        except OSError:
            print("waiting for master", flush=True)
            time.sleep(2)
    sys.exit(1)
  - "{{.MasterAddr}}"
  - "{{.MaxTries}}"
YAML
  MY_POD_NAMESPACE=kubeflow host_process training-operator kubeflow training-operator-webhook-cert "$health" \
    training-operator --enable-scheme pytorchjob --webhook-server-port "$port" \
    --pytorch-init-container-image "${TG_K8S_IMAGE:-localhost/trainguard:e2e}" \
    --pytorch-init-container-template-file "$RUN/training-operator/init-container.yaml" \
    --health-probe-bind-address "127.0.0.1:$health" --metrics-bind-address 0 --leader-elect=false
}

start_trainer() {
  crds "$TR"/manifests/base/crds/trainer.kubeflow.org_*.yaml
  local port health; port=$(free_port 0.0.0.0); health=$(free_port)
  endpoint kubeflow-system kubeflow-trainer-controller-manager "$port" kubeflow-trainer-webhook-cert
  webhooks "$TR/manifests/base/webhook/manifests.yaml" defaulter.trainer.kubeflow.org validator.trainer.kubeflow.org \
    kubeflow-trainer-controller-manager kubeflow-system
  # Trainer 2.2 takes its settings from a configuration file only (upstream's, with the test cluster's addresses)
  mkdir -p "$RUN/trainer"
  cat > "$RUN/trainer/config.yaml" <<YAML
apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
health: {healthProbeBindAddress: "127.0.0.1:$health", readinessEndpointName: readyz, livenessEndpointName: healthz}
metrics: {bindAddress: "0"}
webhook: {port: $port}
leaderElection: {leaderElect: false}
certManagement: {enable: true, webhookServiceName: kubeflow-trainer-controller-manager, webhookSecretName: kubeflow-trainer-webhook-cert}
YAML
  host_process trainer kubeflow-system kubeflow-trainer-webhook-cert "$health" trainer --config "$RUN/trainer/config.yaml"
  # the runtime the TrainJob tests name (validated by Trainer's webhook, so after Trainer is ready)
  kubectl apply --server-side --force-conflicts -f "$TR/manifests/base/runtimes/torch_distributed.yaml" >/dev/null
}

# each once: a running one keeps its ports (its Service's endpoint names them). JobSet first: Trainer's
# TrainJobs run as JobSets.
alive jobset || start_jobset
alive training-operator || start_training_operator
alive trainer || start_trainer
log "controllers ready: JobSet $JOBSET_VERSION, training-operator $TRAINING_OPERATOR_VERSION, Trainer $TRAINER_VERSION"
