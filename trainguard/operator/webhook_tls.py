"""The pod webhook's self-signed certificate, kept by the operator: its Secret, the files kopf serves, the caBundle.

`ensure` (at startup, then every `CHECK_SECONDS` from `rotate_forever`) reads the Secret; when it is
missing, unreadable, for other hosts or due for renewal (`webhook_cert.problem`), it issues a new pair,
first puts the new CA (beside the previous one) into the caBundle of the operator's own
MutatingWebhookConfiguration, then creates the Secret (owned by that configuration, so that deleting it
deletes the Secret) or updates it (with its resourceVersion, so two replicas cannot both win), and
writes the files into the certificate directory, where kopf's `WebhookServer` notices the change and
restarts on them. Used unless the chart's `attach.certManager.enabled` (then cert-manager's Secret is
mounted and none of this runs). The certificate's contents are `webhook_cert`'s.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import datetime
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from trainguard.operator import client, webhook_cert

CHECK_SECONDS = 3600.0
"""How often the Secret and the caBundle are checked: renewal is due at 2/3 of a lifetime of days, and a caBundle
that someone reset is put back within this."""
RETRY_SECONDS = 60.0
"""Next try after a failed check (the API server unreachable, a conflict with another replica)."""
FILES = {"tls.crt": "tls_crt", "tls.key": "tls_key", "ca.crt": "ca_crt"}
"""Secret key (and file name) -> `webhook_cert.Bundle` field."""
WEBHOOK_CONFIG = ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration")

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Target:
    """Where the certificate lives and whom it is for (from the operator's command line)."""

    namespace: str
    """The operator's namespace: the Secret's and the webhook Service's."""
    secret: str
    webhook_config: str
    """Name of the MutatingWebhookConfiguration whose caBundle must hold the CA."""
    service: str
    cert_dir: str
    """The directory kopf serves `tls.crt` and `tls.key` from (writable: an emptyDir)."""
    days: int = 365

    @property
    def hosts(self) -> list[str]:
        """The names the API server may call the webhook Service by."""
        return [f"{self.service}.{self.namespace}.svc", f"{self.service}.{self.namespace}", self.service]


def ensure(kube: client.Kube, target: Target, *, now: datetime.datetime) -> webhook_cert.Bundle:
    """Make the Secret hold a servable certificate, the webhook configuration trust its CA, and the files hold it;
    return the certificate. Raises `client.KubeError` when the API refuses (the caller tries again)."""
    config = kube.get(*WEBHOOK_CONFIG, "", target.webhook_config)
    if config is None:
        raise client.KubeError(
            f"MutatingWebhookConfiguration {target.webhook_config} does not exist: install the chart with "
            "attach.enabled=true (it creates it)",
            status=404,
        )
    secret = kube.get("v1", "Secret", target.namespace, target.secret)
    current = _bundle(secret)
    if secret is None:
        why: str | None = "its Secret does not exist"
    elif current is None:
        why = f"its Secret lacks one of {', '.join(FILES)}"
    else:
        why = webhook_cert.problem(current, target.hosts, now=now)
    if why is None and current is not None:
        _trust(kube, config, current.ca_crt)
    else:
        fresh = webhook_cert.issue(target.hosts, now=now, days=target.days, previous=current)
        log.info(
            "webhook certificate %s/%s: issuing a new one, valid %d days: %s",
            target.namespace, target.secret, target.days, why,
        )  # fmt: skip
        _trust(kube, config, fresh.ca_crt)  # before serving it, so that no admission meets an unknown CA
        data = {key: base64.b64encode(getattr(fresh, field)).decode() for key, field in FILES.items()}
        if secret is None:
            _create(kube, target, data, owner=config)
        else:
            version = (secret.get("metadata") or {}).get("resourceVersion")
            kube.patch("v1", "Secret", target.namespace, target.secret,
                       {"metadata": {"resourceVersion": version}, "data": data})  # fmt: skip
        current = fresh
    write_files(target.cert_dir, current)
    return current


def _create(kube: client.Kube, target: Target, data: dict[str, str], *, owner: dict[str, Any]) -> None:
    """Create the Secret, owned by the webhook configuration: deleting that (helm uninstall) deletes the Secret."""
    meta = owner.get("metadata") or {}
    manifest = {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {
            "name": target.secret, "namespace": target.namespace,
            "labels": {"app.kubernetes.io/managed-by": "trainguard-operator"},
            "ownerReferences": [{"apiVersion": WEBHOOK_CONFIG[0], "kind": WEBHOOK_CONFIG[1],
                                 "name": meta.get("name"), "uid": meta.get("uid")}],
        },
        "data": data,
    }  # fmt: skip
    if not kube.create(manifest):
        raise client.KubeError(
            f"Secret {target.namespace}/{target.secret} was created meanwhile (another replica?); reading it again",
            status=409,
        )


def _bundle(secret: dict[str, Any] | None) -> webhook_cert.Bundle | None:
    data = (secret or {}).get("data") or {}
    if not all(data.get(key) for key in FILES):
        return None
    return webhook_cert.Bundle(**{field: base64.b64decode(data[key]) for key, field in FILES.items()})


def _trust(kube: client.Kube, config: dict[str, Any], ca: bytes) -> None:
    """Set the caBundle of every webhook of the operator's MutatingWebhookConfiguration to `ca`, if it differs."""
    wanted = base64.b64encode(ca).decode()
    hooks = list(config.get("webhooks") or [])
    if all((h.get("clientConfig") or {}).get("caBundle") == wanted for h in hooks):
        return
    for h in hooks:
        h.setdefault("clientConfig", {})["caBundle"] = wanted
    meta = config.get("metadata") or {}
    # The whole list, since a merge patch replaces lists; the resourceVersion makes a concurrent change fail.
    kube.patch(*WEBHOOK_CONFIG, "", str(meta.get("name")),
               {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "webhooks": hooks})  # fmt: skip
    log.info(
        "MutatingWebhookConfiguration %s: caBundle set to the webhook certificate's CA", meta.get("name")
    )


def write_files(directory: str, bundle: webhook_cert.Bundle) -> bool:
    """Write tls.crt, tls.key and ca.crt into `directory` (each replaced atomically) unless they hold these already;
    return whether anything changed."""
    changed = False
    os.makedirs(directory, exist_ok=True)
    for name, field in sorted(FILES.items(), key=lambda kv: kv[0] != "tls.key"):  # the key first
        path = Path(directory) / name
        content: bytes = getattr(bundle, field)
        if path.exists() and path.read_bytes() == content:
            continue
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.")
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        os.replace(tmp, path)
        changed = True
    return changed


async def rotate_forever(kube: client.Kube, target: Target) -> None:
    """Check the certificate every `CHECK_SECONDS` (after a failure, `RETRY_SECONDS`), renewing it when due;
    runs until cancelled."""
    delay = CHECK_SECONDS
    while True:
        await asyncio.sleep(delay)
        try:
            await asyncio.to_thread(ensure, kube, target, now=datetime.datetime.now(tz=datetime.timezone.utc))
            delay = CHECK_SECONDS
        except client.KubeError as err:
            log.warning("webhook certificate: %s; trying again in %.0f s", err, RETRY_SECONDS)
            delay = RETRY_SECONDS
