"""Which webhook URLs and addresses the operator may call: http(s) only, and optionally no internal address.

Used by `delivery` before each attempt and, through `FilteringResolver`, at connection time, so a
name that resolves to an allowed address for the check and to a refused one for the connection
(DNS rebinding) is still refused. With `refuse_internal`, every address that is not globally
routable is refused: loopback, link-local (the cloud metadata service at 169.254.169.254
included), private (RFC 1918, unique-local IPv6), shared (100.64.0.0/10), multicast and reserved
ranges; `refused_networks` adds others, such as a cluster's pod and service ranges when they are
public addresses. Messages never contain the URL (it often carries a token).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
import urllib.parse
from typing import Any

import aiohttp
import aiohttp.abc

ALLOWED_SCHEMES = frozenset({"http", "https"})

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class RefusedAddress(OSError):
    """A webhook's host resolves to an address the policy refuses; retrying cannot help."""


def check_url(url: str) -> str | None:
    """Return why `url` cannot be a webhook (a scheme other than http or https, no host), or None."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "the URL cannot be parsed"
    if parts.scheme.lower() not in ALLOWED_SCHEMES:
        scheme = parts.scheme.lower()
        found = f"scheme {scheme!r}" if scheme.isascii() and scheme.isalnum() else "another scheme"
        return f"only http and https URLs are allowed (found {found})"
    if not parts.hostname:
        return "the URL has no host"
    return None


@dataclasses.dataclass(frozen=True)
class AddressPolicy:
    """Addresses webhooks may not reach."""

    refuse_internal: bool = False
    """Refuse every address that is not globally routable (loopback, link-local, private, shared, reserved)."""
    refused_networks: tuple[IPNetwork, ...] = ()
    """Further networks to refuse, e.g. the cluster's pod and service CIDRs."""

    @classmethod
    def build(
        cls, *, refuse_internal: bool, refused_cidrs: list[str] | tuple[str, ...] = ()
    ) -> AddressPolicy:
        """Return a policy; a malformed CIDR raises ValueError naming it."""
        networks = []
        for cidr in refused_cidrs:
            try:
                networks.append(ipaddress.ip_network(cidr, strict=False))
            except ValueError as err:
                raise ValueError(f"refused network {cidr!r} is not a CIDR such as 10.96.0.0/12") from err
        return cls(refuse_internal=refuse_internal, refused_networks=tuple(networks))

    @property
    def active(self) -> bool:
        """Whether any address is refused at all."""
        return self.refuse_internal or bool(self.refused_networks)

    def refuses(self, address: IPAddress) -> str | None:
        """Return why `address` is refused, or None when it may be called."""
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        for network in self.refused_networks:
            if address.version == network.version and address in network:
                return "it is in a refused network"
        if self.refuse_internal and (not address.is_global or address.is_multicast):
            kind = (
                "link-local (cloud metadata)"
                if address.is_link_local
                else "loopback"
                if address.is_loopback
                else "private or reserved"
            )
            return f"it is a {kind} address and internal addresses are refused"
        return None

    async def check_host(self, host: str, port: int) -> str | None:
        """Return why `host` is refused (any of its addresses is), or None; resolves names with the system resolver."""
        if not self.active:
            return None
        addresses: list[IPAddress | None]
        try:
            addresses = [ipaddress.ip_address(host.strip("[]"))]
        except ValueError:
            resolver = aiohttp.ThreadedResolver()
            try:
                results = await resolver.resolve(host, port, family=socket.AF_UNSPEC)
            finally:
                await resolver.close()
            addresses = [_parse(r["host"]) for r in results]
        for address in addresses:
            reason = "it is not an IP address" if address is None else self.refuses(address)
            if reason is not None:
                return f"the host resolves to a refused address: {reason}"
        return None


class FilteringResolver(aiohttp.abc.AbstractResolver):
    """The system resolver, minus the addresses the policy refuses (connection-time check against DNS rebinding)."""

    def __init__(self, policy: AddressPolicy) -> None:
        self._policy = policy
        self._inner = aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[Any]:
        results = await self._inner.resolve(host, port, family)
        allowed = [
            r
            for r in results
            if (address := _parse(r["host"])) is not None and self._policy.refuses(address) is None
        ]
        if not allowed:
            raise RefusedAddress("the host resolves only to refused addresses")
        return allowed

    async def close(self) -> None:
        await self._inner.close()


def _parse(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None
