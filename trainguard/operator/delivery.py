"""Webhook delivery off the reconcile path: one bounded queue per configured webhook, drained by its own worker.

Handlers call `Dispatcher.submit()`, which neither blocks nor raises; a full queue drops the
delivery and counts it. Deliveries run on the dispatcher's own event-loop thread, so a slow,
failing or trickling receiver delays only later deliveries to itself, never a stop or another
DebugJob. Each attempt has a total deadline (connect, send, response headers), redirects are
refused, only http and https are allowed, and `addresses.AddressPolicy` may refuse internal
addresses. Retryable: connection errors, timeouts, broken responses, HTTP 408, 425, 429 and 5xx;
any other answer is final. The URL often carries a token, so it never reaches a log line, an
Event or a metric: failures name the webhook. Payloads and idempotency keys are `webhooks`'.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import os
import threading
import urllib.parse
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any

import aiohttp

from trainguard._version import __version__
from trainguard.operator import addresses
from trainguard.operator.metrics import OperatorMetrics

log = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
IDEMPOTENCY_HEADER = "Idempotency-Key"


@dataclasses.dataclass(frozen=True)
class Settings:
    """How deliveries are attempted; `OperatorConfig` fills these from the command line."""

    max_attempts: int = 5
    """Tries per delivery, the first included."""
    base_backoff_seconds: float = 0.5
    """First pause between tries; doubles per try up to `max_backoff_seconds`."""
    max_backoff_seconds: float = 8.0
    attempt_timeout_seconds: float = 10.0
    """Total deadline of one attempt: connecting, sending and the response headers together, so a
    receiver that answers one byte at a time is cut off too."""
    queue_size: int = 32
    """Deliveries waiting per webhook of a DebugJob or DebugPolicy; more are dropped (a receiver that far behind is down)."""
    policy: addresses.AddressPolicy = dataclasses.field(default_factory=addresses.AddressPolicy)
    shutdown_grace_seconds: float = 5.0
    """On operator shutdown, how long queued deliveries may still run before they are dropped."""


@dataclasses.dataclass(frozen=True)
class Delivery:
    """One POST to one webhook for one rule transition."""

    receiver: str
    """Queue key: `DebugJob <namespace>/<name>/<webhook name>` (or DebugPolicy); deliveries to one receiver go in order."""
    name: str
    """The webhook's name (logs and Events name it, never the URL)."""
    url: str = dataclasses.field(repr=False)
    body: bytes = dataclasses.field(repr=False)
    key: str
    """Idempotency key, sent as the `Idempotency-Key` header (and inside generic payloads)."""
    failed: Callable[[str], None] = dataclasses.field(default=lambda reason: None, repr=False, compare=False)
    """Called once, from the dispatcher's thread, when the delivery is given up (reason without the URL)."""


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What happened to one delivery."""

    delivered: bool
    attempts: int
    reason: str = ""


async def deliver(
    delivery: Delivery,
    *,
    settings: Settings,
    session: aiohttp.ClientSession,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> Outcome:
    """POST the delivery until a 2xx, a final answer or `settings.max_attempts`; never raises for HTTP trouble."""
    refused = addresses.check_url(delivery.url)
    if refused is not None:
        log.warning("webhook %s: not delivered, %s", delivery.name, refused)
        return Outcome(False, 0, refused)
    attempts = settings.max_attempts
    reason = ""
    for attempt in range(1, attempts + 1):
        retry, reason = await _attempt(delivery, settings=settings, session=session)
        if not reason:
            log.info("webhook %s: delivered (attempt %d of %d)", delivery.name, attempt, attempts)
            return Outcome(True, attempt)
        if not retry:
            log.warning(
                "webhook %s: not delivered, %s; not retrying (fix the receiver or the URL)",
                delivery.name,
                reason,
            )
            return Outcome(False, attempt, reason)
        log.warning("webhook %s: attempt %d of %d failed: %s", delivery.name, attempt, attempts, reason)
        if attempt < attempts:
            await sleep(min(settings.max_backoff_seconds, settings.base_backoff_seconds * 2 ** (attempt - 1)))
    log.error("webhook %s: gave up after %d attempts", delivery.name, attempts)
    return Outcome(False, attempts, f"gave up after {attempts} attempts: {reason}")


async def _attempt(
    delivery: Delivery, *, settings: Settings, session: aiohttp.ClientSession
) -> tuple[bool, str]:
    """Return (retryable, reason) of one POST; the reason is empty on success and never contains the URL."""
    timeout = settings.attempt_timeout_seconds
    try:
        status = await asyncio.wait_for(_post(delivery, policy=settings.policy, session=session), timeout)
    except asyncio.TimeoutError:
        return True, f"no answer within {timeout:g} s"
    except addresses.RefusedAddress as err:
        return False, str(err)
    except aiohttp.ClientConnectorCertificateError:
        return False, "the receiver's TLS certificate is not trusted"
    except aiohttp.ClientConnectorError as err:
        if isinstance(err.os_error, addresses.RefusedAddress):
            return False, str(err.os_error)
        return True, f"cannot connect ({_without_address(err.os_error)})"
    except (aiohttp.InvalidURL, ValueError) as err:
        return False, f"invalid URL ({type(err).__name__})"
    except OSError as err:  # a name that does not resolve, a reset connection
        return True, _without_address(err)
    except aiohttp.ClientError as err:
        # Broken or truncated answers (ServerDisconnectedError, ClientPayloadError, ...): the text may name the host.
        return True, type(err).__name__
    if 200 <= status < 300:
        return False, ""
    if 300 <= status < 400:
        return False, f"HTTP {status}: redirects are not followed (point the webhook at the final URL)"
    return status in RETRYABLE_STATUS, f"HTTP {status}"


async def _post(
    delivery: Delivery, *, policy: addresses.AddressPolicy, session: aiohttp.ClientSession
) -> int:
    """Check the host against the policy, POST, and return the response status (the body is not read)."""
    parts = urllib.parse.urlsplit(delivery.url)
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    refused = await policy.check_host(parts.hostname or "", port)
    if refused is not None:
        raise addresses.RefusedAddress(refused)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": f"trainguard/{__version__}",
        IDEMPOTENCY_HEADER: delivery.key,
    }
    async with session.post(
        delivery.url, data=delivery.body, headers=headers, allow_redirects=False
    ) as response:
        return int(response.status)


def open_session(policy: addresses.AddressPolicy) -> aiohttp.ClientSession:
    """Return the HTTP client for webhooks (call inside a running loop): no proxies, no connection reuse.

    A new connection per attempt makes the connection-time address check run every time.
    """
    connector = aiohttp.TCPConnector(
        force_close=True,
        use_dns_cache=False,
        resolver=addresses.FilteringResolver(policy) if policy.active else None,
    )
    return aiohttp.ClientSession(connector=connector, trust_env=False)


class Dispatcher:
    """Delivers webhooks from its own thread and event loop; `submit()` from any thread."""

    def __init__(self, settings: Settings, *, metrics: OperatorMetrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="trainguard-webhooks", daemon=True)
        self._queues: dict[str, collections.deque[Delivery]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._session: aiohttp.ClientSession | None = None
        self._closing = False
        self._started = threading.Event()

    def start(self) -> Dispatcher:
        """Start the delivery thread; return self."""
        self._thread.start()
        self._started.wait()
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(self._started.set)
        self._loop.run_forever()
        self._loop.close()

    def submit(self, delivery: Delivery) -> None:
        """Queue one delivery (thread-safe, never blocks); a full queue or a closed dispatcher drops it."""
        try:
            self._loop.call_soon_threadsafe(self._enqueue, delivery)
        except RuntimeError:  # the loop is closed: the operator is shutting down
            self._drop(delivery, "shutdown", "the operator is shutting down")

    def _enqueue(self, delivery: Delivery) -> None:
        if self._closing:
            self._drop(delivery, "shutdown", "the operator is shutting down")
            return
        queue = self._queues.setdefault(delivery.receiver, collections.deque())
        if len(queue) >= self.settings.queue_size:
            self._drop(
                delivery,
                "queue_full",
                f"{len(queue)} deliveries already wait for this webhook (its receiver is down)",
            )
            return
        queue.append(delivery)
        self.metrics.webhook_queued.inc()
        if delivery.receiver not in self._workers:
            self._workers[delivery.receiver] = self._loop.create_task(self._drain(delivery.receiver))

    async def _drain(self, receiver: str) -> None:
        """Deliver one receiver's queue in order; the worker ends when the queue is empty."""
        queue = self._queues[receiver]
        try:
            while queue:
                delivery = queue[0]
                try:
                    outcome = await deliver(delivery, settings=self.settings, session=self._client())
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # noqa: BLE001 - a worker must outlive any surprise; the URL stays out
                    outcome = Outcome(False, 0, f"unexpected {type(err).__name__}")
                    log.error("webhook %s: %s", delivery.name, outcome.reason)
                queue.popleft()
                self.metrics.webhook_queued.dec()
                self.metrics.webhook_deliveries.labels(
                    result="success" if outcome.delivered else "failure"
                ).inc()
                if not outcome.delivered:
                    _safely(delivery.failed, outcome.reason)
        finally:
            self._workers.pop(receiver, None)
            if not queue:
                self._queues.pop(receiver, None)

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = open_session(self.settings.policy)
        return self._session

    def _drop(self, delivery: Delivery, reason: str, why: str) -> None:
        log.warning("webhook %s: dropped, %s", delivery.name, why)
        self.metrics.webhook_dropped.labels(reason=reason).inc()
        _safely(delivery.failed, f"dropped: {why}")

    def pending(self) -> int:
        """Deliveries queued or running now (for tests and the shutdown log)."""
        return int(self._call(lambda: sum(len(q) for q in self._queues.values())))

    def _call(self, fn: Callable[[], Any]) -> Any:
        future: Future[Any] = Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except Exception as err:  # noqa: BLE001 - handed to the caller
                future.set_exception(err)

        self._loop.call_soon_threadsafe(run)
        return future.result(timeout=10)

    def close(self) -> None:
        """Let queued deliveries run for `shutdown_grace_seconds`, drop the rest (counted), stop the thread."""
        if not self._thread.is_alive():
            return
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        future.result(timeout=self.settings.shutdown_grace_seconds + 30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _shutdown(self) -> None:
        self._closing = True
        workers = list(self._workers.values())
        if workers:
            _done, running = await asyncio.wait(workers, timeout=self.settings.shutdown_grace_seconds)
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
        for queue in list(self._queues.values()):
            while queue:
                self.metrics.webhook_queued.dec()
                self._drop(queue.popleft(), "shutdown", "the operator stopped before it could be delivered")
        self._queues.clear()
        if self._session is not None:
            await self._session.close()
            self._session = None


def _without_address(err: OSError) -> str:
    """Describe a socket error by its errno alone (asyncio's texts name the host and port)."""
    if err.errno is not None and err.errno < 0:  # getaddrinfo's codes
        return "the host name does not resolve"
    return os.strerror(err.errno) if err.errno else type(err).__name__


def _safely(callback: Callable[[str], None], reason: str) -> None:
    try:
        callback(reason)
    except Exception as err:  # noqa: BLE001 - reporting a failure must not take the worker down
        log.warning("could not report a webhook failure: %s: %s", type(err).__name__, err)
