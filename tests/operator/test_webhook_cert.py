"""The pod webhook's self-signed certificate: issued for the Service's names, trusted through its CA bundle in a
real TLS handshake, renewed at two thirds of its life with the previous CA still trusted; and kept by the operator
in its Secret and its MutatingWebhookConfiguration's caBundle on an emulated API server (KMock)."""

from __future__ import annotations

import asyncio
import base64
import datetime
import socket
import ssl
import threading
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from tests.kube import KubeEnv
from trainguard.operator import client, webhook_cert, webhook_tls

HOSTS = ["tg-webhook.tg.svc", "tg-webhook.tg", "tg-webhook"]
DAY = datetime.timedelta(days=1)
T0 = datetime.datetime.now(tz=datetime.timezone.utc).replace(microsecond=0) - 25 * DAY
"""Issue times: 30-day certificates issued at T0 and renewed at T0 + 20 days are both valid today (for the TLS
handshakes, which use the real clock) by a margin of days."""


def _handshake(bundle: webhook_cert.Bundle, tmp_path: Path, *, trust: bytes, host: str) -> None:
    """Serve `bundle` on 127.0.0.1 and connect as the API server would: verifying it against `trust` for `host`."""
    (tmp_path / "tls.crt").write_bytes(bundle.tls_crt)
    (tmp_path / "tls.key").write_bytes(bundle.tls_key)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        try:
            with server_ctx.wrap_socket(conn, server_side=True) as tls:
                tls.recv(1)
        except (ssl.SSLError, OSError):
            pass  # the client refused us: its side raises

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        client_ctx = ssl.create_default_context(cadata=trust.decode())
        with (
            socket.create_connection(("127.0.0.1", port)) as raw,
            client_ctx.wrap_socket(raw, server_hostname=host) as tls,
        ):
            tls.sendall(b"x")
    finally:
        thread.join(timeout=5)
        listener.close()


def test_the_issued_certificate_is_trusted_through_its_ca_for_the_services_names(tmp_path: Path) -> None:
    bundle = webhook_cert.issue(HOSTS, now=T0, days=30)
    for host in HOSTS:
        _handshake(bundle, tmp_path, trust=bundle.ca_crt, host=host)
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(bundle, tmp_path, trust=bundle.ca_crt, host="other.tg.svc")
    stranger = webhook_cert.issue(HOSTS, now=T0, days=30)
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(bundle, tmp_path, trust=stranger.ca_crt, host=HOSTS[0])


def test_long_service_names_are_issued_and_trusted(tmp_path: Path) -> None:
    # A common name holds at most 64 characters; the e2e release's host with the CA's suffix had 75.
    service = "tg-trainguard-webhook-with-a-release-name-this-long"
    hosts = [
        f"{service}.a-namespace-of-forty-characters-or-so.svc",
        f"{service}.a-namespace-of-forty-characters-or-so",
    ]
    bundle = webhook_cert.issue(hosts, now=T0, days=30)
    for host in hosts:
        _handshake(bundle, tmp_path, trust=bundle.ca_crt, host=host)


def test_a_certificate_is_due_at_two_thirds_of_its_life_and_checked_for_its_hosts() -> None:
    bundle = webhook_cert.issue(HOSTS, now=T0, days=30)
    start = T0 - webhook_cert.CLOCK_SKEW
    assert webhook_cert.renew_at(bundle) == start + (T0 + 30 * DAY - start) * 2 / 3
    assert webhook_cert.problem(bundle, HOSTS, now=T0 + 19 * DAY) is None
    assert "due for renewal" in str(webhook_cert.problem(bundle, HOSTS, now=T0 + 20 * DAY))
    assert webhook_cert.problem(bundle, [*HOSTS, "tg-webhook.other.svc"], now=T0) == (
        "it is not valid for tg-webhook.other.svc"
    )
    other = webhook_cert.issue(HOSTS, now=T0, days=30)
    assert (
        webhook_cert.problem(
            webhook_cert.Bundle(tls_crt=bundle.tls_crt, tls_key=bundle.tls_key, ca_crt=other.ca_crt),
            HOSTS,
            now=T0,
        )
        == "its CA did not sign it"
    )
    assert (
        webhook_cert.problem(
            webhook_cert.Bundle(tls_crt=bundle.tls_crt, tls_key=other.tls_key, ca_crt=bundle.ca_crt),
            HOSTS,
            now=T0,
        )
        == "its key does not match it"
    )
    assert "cannot be read" in str(
        webhook_cert.problem(webhook_cert.Bundle(tls_crt=b"junk", tls_key=b"", ca_crt=b""), HOSTS, now=T0)
    )


def test_a_renewal_keeps_trusting_the_previous_ca_until_it_expires(tmp_path: Path) -> None:
    old = webhook_cert.issue(HOSTS, now=T0, days=30)
    new = webhook_cert.issue(HOSTS, now=T0 + 20 * DAY, days=30, previous=old)
    assert len(x509.load_pem_x509_certificates(new.ca_crt)) == 2
    # While replicas switch, the API server trusts the old certificate and the new one through the new bundle.
    _handshake(old, tmp_path, trust=new.ca_crt, host=HOSTS[0])
    _handshake(new, tmp_path, trust=new.ca_crt, host=HOSTS[0])
    assert webhook_cert.problem(new, HOSTS, now=T0 + 20 * DAY) is None
    # The next renewal drops the old CA (expired by then) and keeps only the one before.
    newer = webhook_cert.issue(HOSTS, now=T0 + 40 * DAY, days=30, previous=new)
    assert x509.load_pem_x509_certificates(newer.ca_crt)[1] == x509.load_pem_x509_certificates(new.ca_crt)[0]
    assert len(x509.load_pem_x509_certificates(newer.ca_crt)) == 2


WEBHOOK_CONFIG = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


async def _webhook_config(kube: KubeEnv) -> None:
    body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "tg-attach"},
            "webhooks": [{"name": "pods.attach.trainguard.dev", "clientConfig": {
                "service": {"name": "tg-webhook", "namespace": "tg", "path": "/inject-pods"}}}]}  # fmt: skip
    async with kube.emulator.post(WEBHOOK_CONFIG, json=body) as resp:
        assert resp.status < 400, await resp.text()


def _ca_bundle(kube: KubeEnv) -> bytes:
    config = kube.get("admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", None, "tg-attach")
    assert config is not None
    (hook,) = config["webhooks"]
    assert hook["clientConfig"]["service"]["path"] == "/inject-pods", "the rest of the webhook is kept"
    return base64.b64decode(hook["clientConfig"]["caBundle"])


def _secret(kube: KubeEnv) -> dict[str, Any]:
    secret = kube.get("v1/secrets", "tg", "tg-webhook-tls")
    assert secret is not None
    return secret


async def test_the_operator_creates_the_secret_trusts_its_ca_and_renews_it_when_due(
    kube: KubeEnv, tmp_path: Path
) -> None:
    await _webhook_config(kube)
    target = webhook_tls.Target(namespace="tg", secret="tg-webhook-tls", webhook_config="tg-attach",
                                service="tg-webhook", cert_dir=str(tmp_path / "certs"), days=30)  # fmt: skip
    api = client.Kube.connect(pool_size=2)
    try:
        first = await asyncio.to_thread(webhook_tls.ensure, api, target, now=T0)
        secret = _secret(kube)
        assert secret["type"] == "kubernetes.io/tls"
        config = kube.get("admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", None, "tg-attach")
        assert config is not None
        (owner,) = secret["metadata"]["ownerReferences"]  # deleting the configuration (uninstall) deletes it
        assert (owner["kind"], owner["name"], owner["uid"]) == (
            "MutatingWebhookConfiguration",
            "tg-attach",
            config["metadata"]["uid"],
        )
        assert base64.b64decode(secret["data"]["tls.crt"]) == first.tls_crt
        assert _ca_bundle(kube) == first.ca_crt
        assert (tmp_path / "certs" / "tls.crt").read_bytes() == first.tls_crt
        assert (tmp_path / "certs" / "tls.key").read_bytes() == first.tls_key
        _handshake(first, tmp_path, trust=_ca_bundle(kube), host="tg-webhook.tg.svc")

        # Not due yet: nothing is written (a second replica, or the hourly check, reads the same pair).
        version = secret["metadata"]["resourceVersion"]
        assert await asyncio.to_thread(webhook_tls.ensure, api, target, now=T0 + 19 * DAY) == first
        assert _secret(kube)["metadata"]["resourceVersion"] == version

        # Someone re-applied the webhook configuration without the caBundle: it is put back.
        async with kube.emulator.patch(f"{WEBHOOK_CONFIG}/tg-attach", json={"webhooks": [{
                "name": "pods.attach.trainguard.dev", "clientConfig": {
                    "service": {"name": "tg-webhook", "namespace": "tg", "path": "/inject-pods"}}}]},
                headers={"Content-Type": "application/merge-patch+json"}) as resp:  # fmt: skip
            assert resp.status < 400
        await asyncio.to_thread(webhook_tls.ensure, api, target, now=T0 + 19 * DAY)
        assert _ca_bundle(kube) == first.ca_crt

        # Due: a new pair in the Secret and the files, and a bundle that trusts the old certificate too.
        renewed = await asyncio.to_thread(webhook_tls.ensure, api, target, now=T0 + 20 * DAY)
        assert renewed.tls_crt != first.tls_crt
        assert base64.b64decode(_secret(kube)["data"]["tls.crt"]) == renewed.tls_crt
        assert (tmp_path / "certs" / "tls.crt").read_bytes() == renewed.tls_crt
        assert _ca_bundle(kube) == renewed.ca_crt
        _handshake(first, tmp_path, trust=_ca_bundle(kube), host="tg-webhook.tg.svc")
        _handshake(renewed, tmp_path, trust=_ca_bundle(kube), host="tg-webhook.tg.svc")
    finally:
        api.close()


async def test_without_its_webhook_configuration_the_operator_says_what_to_install(
    kube: KubeEnv, tmp_path: Path
) -> None:
    target = webhook_tls.Target(namespace="tg", secret="tg-webhook-tls", webhook_config="tg-attach",
                                service="tg-webhook", cert_dir=str(tmp_path))  # fmt: skip
    api = client.Kube.connect(pool_size=2)
    try:
        with pytest.raises(client.KubeError, match="attach.enabled=true"):
            await asyncio.to_thread(webhook_tls.ensure, api, target, now=T0)
    finally:
        api.close()
    assert kube.get("v1/secrets", "tg", "tg-webhook-tls") is None, "no certificate nobody trusts"
