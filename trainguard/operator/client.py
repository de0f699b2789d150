"""A thin, synchronous REST layer over the official `kubernetes` client for the few kinds the operator touches.

Requests go through `ApiClient.call_api` with `_preload_content=False`, so responses are parsed
as plain JSON instead of typed models (3000 creates for 500 DebugJobs stay cheap). Configuration
is loaded at call time, not import time: `KUBECONFIG` (tests, local runs) or the in-cluster
service account. API failures become `KubeError` with the HTTP status; 404 and 409 are answered
as values (`None`, `False`) because "already gone" and "already there" are normal for idempotent
handlers.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import kubernetes

from trainguard.api import debugjob, debugpolicy
from trainguard.errors import TrainGuardError
from trainguard.operator import workloads

PLURALS: dict[tuple[str, str], str] = {
    ("v1", "ServiceAccount"): "serviceaccounts",
    ("v1", "ConfigMap"): "configmaps",
    ("v1", "Service"): "services",
    ("v1", "Secret"): "secrets",
    ("v1", "Pod"): "pods",
    ("rbac.authorization.k8s.io/v1", "Role"): "roles",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "rolebindings",
    ("kueue.x-k8s.io/v1beta2", "Workload"): "workloads",
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"): "mutatingwebhookconfigurations",
    (debugjob.API_VERSION, debugjob.KIND): debugjob.PLURAL,
    (debugpolicy.API_VERSION, debugpolicy.KIND): debugpolicy.PLURAL,
    **{(w.api_version, w.kind): w.plural for w in workloads.declared()},
}
"""Every kind the operator reads or writes: the training workloads' kinds come from their adapters
(`workloads`); the RBAC inventory in the chart lists the same, a workload kind's behind its switch."""


class KubeError(TrainGuardError):
    """An API request failed; `status` is the HTTP status (0 when no response came)."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


def load_configuration() -> kubernetes.client.Configuration:
    """Return client settings from `KUBECONFIG` when set, else in-cluster, else ~/.kube/config."""
    config = kubernetes.client.Configuration()
    kubeconfig = os.environ.get("KUBECONFIG")
    if kubeconfig:
        kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=config)
        return config
    try:
        kubernetes.config.load_incluster_config(client_configuration=config)
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config(client_configuration=config)
    return config


def path(
    api_version: str, kind: str, namespace: str, name: str | None = None, subresource: str | None = None
) -> str:
    """Return the REST path of an object (or its collection when `name` is None); namespace "" for a
    cluster-scoped kind."""
    try:
        plural = PLURALS[api_version, kind]
    except KeyError:
        raise KubeError(f"the operator does not manage {kind} ({api_version})", status=0) from None
    root = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    out = f"{root}/namespaces/{namespace}/{plural}" if namespace else f"{root}/{plural}"
    if name is not None:
        out += f"/{name}"
    if subresource is not None:
        out += f"/{subresource}"
    return out


def _server_message(body: Any) -> str:
    """Return `: <message>` from an API error's Status body (why a request was refused), or nothing."""
    try:
        message = json.loads(body).get("message")
    except (TypeError, ValueError, AttributeError):
        return ""
    return f": {message}" if isinstance(message, str) and message else ""


class Kube:
    """The operator's API access: create, get, merge-patch, delete, read a Secret key."""

    def __init__(self, api_client: kubernetes.client.ApiClient) -> None:
        self.api_client = api_client

    @classmethod
    def connect(cls, *, pool_size: int = 32) -> Kube:
        """Return a client configured from the environment, with a connection pool for concurrent handlers."""
        config = load_configuration()
        config.connection_pool_maxsize = pool_size
        return cls(kubernetes.client.ApiClient(config))

    def close(self) -> None:
        self.api_client.close()

    def _call(
        self, method: str, url: str, body: Any = None, *, content_type: str = "application/json"
    ) -> Any:
        try:
            response = self.api_client.call_api(
                url,
                method,
                header_params={"Content-Type": content_type, "Accept": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
                _request_timeout=30,
            )
        except kubernetes.client.ApiException as err:
            raise KubeError(
                f"{method} {url}: HTTP {err.status} {err.reason}{_server_message(err.body)}",
                status=int(err.status or 0),
            ) from err
        except (OSError, ValueError) as err:
            raise KubeError(f"{method} {url}: {type(err).__name__}: {err}", status=0) from err
        data = response.data
        return json.loads(data) if data else None

    def create(self, manifest: dict[str, Any]) -> bool:
        """Create an object; return False when one with that name already exists (HTTP 409)."""
        meta = manifest["metadata"]
        url = path(manifest["apiVersion"], manifest["kind"], meta["namespace"])
        try:
            self._call("POST", url, manifest)
        except KubeError as err:
            if err.status == 409:
                return False
            raise
        return True

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Return an object, or None when it does not exist."""
        try:
            result: dict[str, Any] = self._call("GET", path(api_version, kind, namespace, name))
        except KubeError as err:
            if err.status == 404:
                return None
            raise
        return result

    def list(
        self, api_version: str, kind: str, namespace: str, *, labels: dict[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """Return the objects of a kind in a namespace (with these labels); [] when the API does not serve the kind."""
        url = path(api_version, kind, namespace)
        if labels:
            url += "?labelSelector=" + ",".join(f"{k}%3D{v}" for k, v in sorted(labels.items()))
        try:
            result = self._call("GET", url)
        except KubeError as err:
            if err.status == 404:
                return []
            raise
        items: list[dict[str, Any]] = (result or {}).get("items") or []
        return items

    def patch(
        self,
        api_version: str,
        kind: str,
        namespace: str,
        name: str,
        body: dict[str, Any],
        *,
        subresource: str | None = None,
    ) -> dict[str, Any] | None:
        """JSON-merge-patch an object (or a subresource); return None when it does not exist."""
        url = path(api_version, kind, namespace, name, subresource)
        try:
            result: dict[str, Any] = self._call(
                "PATCH", url, body, content_type="application/merge-patch+json"
            )
        except KubeError as err:
            if err.status == 404:
                return None
            raise
        return result

    def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        """Delete an object and its dependents in the background; return False when it was already gone."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        try:
            self._call("DELETE", path(api_version, kind, namespace, name), body)
        except KubeError as err:
            if err.status == 404:
                return False
            raise
        return True

    def secret_value(self, namespace: str, name: str, key: str) -> str:
        """Return one decoded value of a Secret; the error names the Secret and key, never the value."""
        secret = self.get("v1", "Secret", namespace, name)
        if secret is None:
            raise KubeError(
                f"Secret {namespace}/{name} does not exist; create it with key {key!r}", status=404
            )
        data = secret.get("data") or {}
        if key in data:
            return base64.b64decode(data[key]).decode()
        string_data = secret.get("stringData") or {}
        if key in string_data:
            return str(string_data[key])
        raise KubeError(
            f"Secret {namespace}/{name} has no key {key!r} (keys: {', '.join(sorted(data)) or 'none'})",
            status=404,
        )
