"""The pod webhook's self-signed certificate: issue a CA and a serving certificate, and say when to renew them.

Pure (no API calls; the time comes in): `webhook_tls` keeps the pair in a Secret, writes the files kopf
serves and puts the CA into the webhook configuration. Each renewal makes a new CA and a new serving
certificate; the bundle the API server trusts holds the new CA and the previous one until the previous
one expires, so a replica still serving the old certificate is trusted while it switches.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
from collections.abc import Sequence

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

RENEW_AT_FRACTION = 2 / 3
"""Renew once this fraction of the serving certificate's lifetime has passed: a third of it is left for an operator
that was down or could not reach the API server to catch up."""
CLOCK_SKEW = datetime.timedelta(minutes=5)
"""notBefore is set this far in the past, so that an API server whose clock runs behind accepts a fresh certificate."""


CA_KEY_USAGE = x509.KeyUsage(
    digital_signature=False, content_commitment=False, key_encipherment=False, data_encipherment=False,
    key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False,
)  # fmt: skip
"""The CA signs certificates only."""


@dataclasses.dataclass(frozen=True)
class Bundle:
    """A serving certificate, its key and the CAs to trust (PEM), as the Secret holds them."""

    tls_crt: bytes
    tls_key: bytes = dataclasses.field(repr=False)
    ca_crt: bytes
    """The CA that signed `tls_crt`, then the previous CA while it is still valid."""


MAX_COMMON_NAME = 64
"""Characters a certificate's common name may hold (RFC 5280 ub-common-name)."""


def _common_name(host: str) -> str:
    """The serving certificate's subject: the host, or its first label when the host is longer than a common
    name may be (clients match the subject alternative names, which hold every host in full)."""
    return host if len(host) <= MAX_COMMON_NAME else host.split(".", 1)[0][:MAX_COMMON_NAME]


def issue(
    hosts: Sequence[str], *, now: datetime.datetime, days: int, previous: Bundle | None = None
) -> Bundle:
    """Return a new CA and a serving certificate for `hosts` (the first is the subject), valid `days` from `now`.

    The CA of `previous`, when still valid at `now`, stays in the bundle behind the new one."""
    if not hosts:
        raise ValueError("a webhook certificate needs at least one host name")
    if days < 1:
        raise ValueError(f"a webhook certificate must be valid for at least 1 day, got {days}")
    start = now - CLOCK_SKEW
    end = now + datetime.timedelta(days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    # A name of its own per CA: a bundle holds two during a renewal, and TLS clients pick the issuer by name.
    ca_name = x509.Name(
        [
            # Not the host name: a common name holds at most 64 characters, and `<service>.<namespace>.svc` with
            # this suffix passes that for most releases (75 for the chart's own end-to-end release).
            x509.NameAttribute(
                NameOID.COMMON_NAME, f"trainguard webhook CA {now:%Y%m%d%H%M%S}-{os.urandom(4).hex()}"
            )
        ]
    )
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(CA_KEY_USAGE, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, _common_name(hosts[0]))]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in hosts]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    bundle = ca.public_bytes(serialization.Encoding.PEM)
    if previous is not None:
        bundle += b"".join(
            c.public_bytes(serialization.Encoding.PEM)
            for c in _certificates(previous.ca_crt)[:1]
            if c.not_valid_after_utc > now
        )
    return Bundle(
        tls_crt=cert.public_bytes(serialization.Encoding.PEM),
        tls_key=key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
        ca_crt=bundle,
    )


def renew_at(bundle: Bundle) -> datetime.datetime:
    """Return when the serving certificate is due for renewal (`RENEW_AT_FRACTION` of its lifetime)."""
    cert = x509.load_pem_x509_certificate(bundle.tls_crt)
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    return start + (end - start) * RENEW_AT_FRACTION


def problem(bundle: Bundle, hosts: Sequence[str], *, now: datetime.datetime) -> str | None:
    """Return why the bundle cannot be served for `hosts` at `now` (unreadable, due for renewal, other hosts, not
    signed by its CA, a key that does not match), or None when it can."""
    try:
        cert = x509.load_pem_x509_certificate(bundle.tls_crt)
        cas = _certificates(bundle.ca_crt)
        key = serialization.load_pem_private_key(bundle.tls_key, password=None)
    except ValueError as err:
        return f"it cannot be read ({err})"
    if now >= renew_at(bundle):
        return f"it is due for renewal since {renew_at(bundle):%Y-%m-%d %H:%M} UTC (expires {cert.not_valid_after_utc:%Y-%m-%d})"
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return "it names no host"
    missing = sorted(set(hosts) - set(names.get_values_for_type(x509.DNSName)))
    if missing:
        return f"it is not valid for {', '.join(missing)}"
    if not cas:
        return "it has no CA"
    try:
        cert.verify_directly_issued_by(cas[0])
    except (ValueError, TypeError, InvalidSignature):
        return "its CA did not sign it"
    if key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    ) != cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    ):
        return "its key does not match it"
    return None


def _certificates(pem: bytes) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(pem) if pem.strip() else []
