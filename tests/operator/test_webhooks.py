"""Webhook payloads and delivery against real local receivers: deadlines, retries, refusals, queues, keys."""

from __future__ import annotations

import ipaddress
import json
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from tests.operator.conftest import WebhookReceiver
from tests.operator.receivers import RawReceiver
from trainguard.api.debugjob import WebhookFormat
from trainguard.operator import addresses, delivery, webhooks
from trainguard.operator.metrics import OperatorMetrics

EVENT = webhooks.RuleEvent(
    namespace="ml", debugjob="llm", uid="u1", rule="exploding_tensor", action="stop", severity="critical",
    step=1200, rank=3, message="grad/fc.weight l2 4.1e5 above 1e4", time="2026-11-22T05:00:00Z",
)  # fmt: skip
FAST = delivery.Settings(base_backoff_seconds=0.01, max_backoff_seconds=0.01, attempt_timeout_seconds=5)


@pytest.fixture
def raw() -> Iterator[list[RawReceiver]]:
    """Receivers a test opens with `raw.append(RawReceiver(...))`; all closed at teardown."""
    opened: list[RawReceiver] = []
    yield opened
    for receiver in opened:
        receiver.close()


def _delivery(
    url: str, *, receiver: str = "ml/llm/team", failed: list[str] | None = None
) -> delivery.Delivery:
    body = json.dumps(webhooks.payload(EVENT, WebhookFormat.GENERIC)).encode()
    return delivery.Delivery(
        receiver=receiver, name="team", url=url, body=body, key=webhooks.idempotency_key(EVENT),
        failed=(failed.append if failed is not None else lambda reason: None),
    )  # fmt: skip


async def _deliver(
    url: str, settings: delivery.Settings = FAST, pauses: list[float] | None = None
) -> delivery.Outcome:
    async def sleep(seconds: float) -> None:
        if pauses is not None:
            pauses.append(seconds)

    async with delivery.open_session(settings.policy) as session:
        return await delivery.deliver(_delivery(url), settings=settings, session=session, sleep=sleep)


# Payloads and keys


def test_generic_payload_is_versioned_and_names_rule_and_step() -> None:
    body = webhooks.payload(EVENT, WebhookFormat.GENERIC)
    assert body["kind"] == "TrainGuardRuleEvent" and body["version"] == "v1"
    assert body["event"]["rule"] == "exploding_tensor" and body["event"]["step"] == 1200
    assert "rank 3" in body["summary"] and "suspended" in body["summary"]
    assert body["idempotency_key"] == webhooks.idempotency_key(EVENT)


def test_a_stop_names_its_earlier_sign_in_the_summary_and_the_payload() -> None:
    sign = webhooks.EarlierSign(rule="oscillating_loss", step=800, rank=0, message="loss swings")
    event = EVENT.model_copy(update={"earlier_sign": sign})
    body = webhooks.payload(event, WebhookFormat.GENERIC)
    assert body["summary"].endswith(
        "(the Job was suspended); earlier sign: rule oscillating_loss at step 800 on rank 0"
    )
    assert body["event"]["earlier_sign"] == {
        "rule": "oscillating_loss",
        "step": 800,
        "rank": 0,
        "message": "loss swings",
    }
    assert webhooks.payload(EVENT, WebhookFormat.GENERIC)["event"]["earlier_sign"] is None


def test_slack_payload_is_a_text_message() -> None:
    body = webhooks.payload(EVENT, WebhookFormat.SLACK)
    assert set(body) == {"text"} and "CRITICAL" in body["text"] and "ml/llm" in body["text"]


def test_the_idempotency_key_names_the_transition_not_the_moment() -> None:
    key = webhooks.idempotency_key(EVENT)
    # Seen again later (a retried handler, a restarted operator): same DebugJob, rule and finding, same key.
    assert webhooks.idempotency_key(EVENT.model_copy(update={"time": "2026-11-22T06:00:00Z"})) == key
    for change in ({"uid": "u2"}, {"rule": "loss_spike"}, {"step": 1300}):
        assert webhooks.idempotency_key(EVENT.model_copy(update=change)) != key, change
    assert key.startswith("tg-") and len(key) == 35


# One delivery, against real receivers


async def test_retryable_failures_are_retried_with_growing_backoff_under_one_key(
    webhook_receiver: WebhookReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    webhook_receiver.statuses = [503, 429]
    pauses: list[float] = []
    settings = delivery.Settings(base_backoff_seconds=0.5)
    with caplog.at_level(logging.INFO, logger="trainguard.operator.delivery"):
        outcome = await _deliver(webhook_receiver.url, settings, pauses)
    assert outcome == delivery.Outcome(True, 3)
    assert len(webhook_receiver.paths) == 3 and pauses == [0.5, 1.0]
    assert webhook_receiver.calls == [webhooks.payload(EVENT, WebhookFormat.GENERIC)]
    keys = {h[delivery.IDEMPOTENCY_HEADER.lower()] for h in webhook_receiver.headers}
    assert keys == {webhooks.idempotency_key(EVENT)}, "every attempt carries the same key"
    assert "attempt 1 of 5 failed: HTTP 503" in caplog.text and "delivered (attempt 3 of 5)" in caplog.text
    assert "secret-token-123" not in caplog.text


async def test_a_receiver_that_keeps_answering_500_is_tried_max_attempts_times(
    raw: list[RawReceiver],
) -> None:
    receiver = RawReceiver("status:500")
    raw.append(receiver)
    settings = delivery.Settings(max_attempts=3, base_backoff_seconds=0)
    assert await _deliver(receiver.url, settings) == delivery.Outcome(
        False, 3, "gave up after 3 attempts: HTTP 500"
    )
    assert receiver.connections == 3


async def test_client_errors_are_final(webhook_receiver: WebhookReceiver) -> None:
    webhook_receiver.statuses = [404]
    pauses: list[float] = []
    outcome = await _deliver(webhook_receiver.url, FAST, pauses)
    assert outcome == delivery.Outcome(False, 1, "HTTP 404")
    assert len(webhook_receiver.paths) == 1 and pauses == []


async def test_attempts_are_bounded_and_the_url_never_reaches_the_log(
    webhook_receiver: WebhookReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    url = webhook_receiver.url
    webhook_receiver.close()  # nothing listens any more: connection refused on every attempt
    pauses: list[float] = []
    settings = delivery.Settings(max_attempts=3, base_backoff_seconds=1, max_backoff_seconds=1.5)
    with caplog.at_level(logging.INFO, logger="trainguard.operator.delivery"):
        outcome = await _deliver(url, settings, pauses)
    assert not outcome.delivered and outcome.attempts == 3 and pauses == [1, 1.5]
    assert "attempt 1 of 3 failed: cannot connect (Connection refused)" in caplog.text
    assert "gave up after 3 attempts" in caplog.text
    assert "secret-token-123" not in caplog.text and "127.0.0.1" not in caplog.text


@pytest.mark.parametrize("refuse_internal", [False, True], ids=["direct", "checked-first"])
async def test_a_host_that_does_not_resolve_is_named_as_such_without_its_name(refuse_internal: bool) -> None:
    settings = delivery.Settings(
        max_attempts=1, policy=addresses.AddressPolicy(refuse_internal=refuse_internal)
    )
    outcome = await _deliver(
        "http://hooks.trainguard.invalid/secret-token-123", settings
    )  # RFC 6761: never resolves
    assert not outcome.delivered and "the host name does not resolve" in outcome.reason
    assert "trainguard.invalid" not in outcome.reason


@pytest.mark.parametrize("behaviour", ["trickle", "hang"])
async def test_a_receiver_that_never_finishes_answering_is_cut_off_by_the_total_deadline(
    raw: list[RawReceiver], behaviour: str
) -> None:
    # `trickle` sends a byte every 20 ms forever: a per-read timeout would never fire, a total deadline does.
    receiver = RawReceiver(behaviour, interval_seconds=0.02)
    raw.append(receiver)
    settings = delivery.Settings(max_attempts=2, base_backoff_seconds=0, attempt_timeout_seconds=0.5)
    outcome = await _deliver(receiver.url, settings)
    assert outcome == delivery.Outcome(False, 2, "gave up after 2 attempts: no answer within 0.5 s")
    assert receiver.connections == 2


async def test_a_truncated_answer_is_a_retried_failure_and_never_an_exception(raw: list[RawReceiver]) -> None:
    receiver = RawReceiver("truncated")
    raw.append(receiver)
    outcome = await _deliver(receiver.url, delivery.Settings(max_attempts=2, base_backoff_seconds=0))
    assert not outcome.delivered and outcome.attempts == 2 and receiver.connections == 2
    assert "secret-token-123" not in outcome.reason and "127.0.0.1" not in outcome.reason


async def test_a_2xx_status_is_delivered_even_when_the_body_never_completes(raw: list[RawReceiver]) -> None:
    # The receiver accepted the event (its status line says so); its unfinished body is not read at all.
    receiver = RawReceiver("incomplete-body")
    raw.append(receiver)
    assert await _deliver(receiver.url) == delivery.Outcome(True, 1)


async def test_redirects_are_refused_not_followed(
    raw: list[RawReceiver], webhook_receiver: WebhookReceiver
) -> None:
    receiver = RawReceiver(f"redirect:{webhook_receiver.url}")
    raw.append(receiver)
    outcome = await _deliver(receiver.url)
    assert outcome == delivery.Outcome(
        False, 1, "HTTP 302: redirects are not followed (point the webhook at the final URL)"
    )
    assert webhook_receiver.paths == [], "the redirect target was never called"


@pytest.mark.parametrize(
    "url, scheme",
    [("file:///etc/passwd", "file"), ("ftp://example.com/x", "ftp"), ("gopher://127.0.0.1:70/x", "gopher")],
)
async def test_only_http_and_https_urls_are_sent(url: str, scheme: str) -> None:
    outcome = await _deliver(url)
    assert outcome == delivery.Outcome(
        False, 0, f"only http and https URLs are allowed (found scheme {scheme!r})"
    )


# Address policy


@pytest.mark.parametrize(
    "address, refused",
    [
        ("127.0.0.1", True), ("169.254.169.254", True), ("10.1.2.3", True), ("172.16.0.1", True),
        ("192.168.1.1", True), ("100.64.0.1", True), ("0.0.0.0", True), ("224.0.0.1", True), ("::1", True),
        ("fe80::1", True), ("fd00:ec2::254", True), ("::ffff:169.254.169.254", True),
        ("8.8.8.8", False), ("2001:4860:4860::8888", False), ("151.101.1.69", False),
    ],
)  # fmt: skip
def test_refuse_internal_refuses_every_address_that_is_not_globally_routable(
    address: str, refused: bool
) -> None:
    policy = addresses.AddressPolicy(refuse_internal=True)
    assert (policy.refuses(ipaddress.ip_address(address)) is not None) is refused
    assert addresses.AddressPolicy().refuses(ipaddress.ip_address(address)) is None, "off by default"


def test_refused_networks_add_to_the_policy_and_a_bad_cidr_is_named() -> None:
    policy = addresses.AddressPolicy.build(refuse_internal=False, refused_cidrs=["203.0.113.0/24"])
    assert policy.refuses(ipaddress.ip_address("203.0.113.9")) == "it is in a refused network"
    assert policy.refuses(ipaddress.ip_address("198.51.100.1")) is None
    with pytest.raises(ValueError, match="'10.0.0.0/33' is not a CIDR"):
        addresses.AddressPolicy.build(refuse_internal=False, refused_cidrs=["10.0.0.0/33"])


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "169.254.169.254"])
async def test_an_internal_host_is_refused_before_anything_is_sent(
    webhook_receiver: WebhookReceiver, host: str
) -> None:
    url = webhook_receiver.url.replace("127.0.0.1", host)
    settings = delivery.Settings(
        policy=addresses.AddressPolicy(refuse_internal=True), attempt_timeout_seconds=5
    )
    outcome = await _deliver(url, settings)
    assert not outcome.delivered and outcome.attempts == 1, "a refusal is final"
    assert outcome.reason.startswith("the host resolves to a refused address: it is a ")
    assert webhook_receiver.paths == []


async def test_the_connection_time_resolver_drops_refused_addresses() -> None:
    # Checked where the connection is made too, so a name that resolves differently later (DNS rebinding) is caught.
    resolver = addresses.FilteringResolver(addresses.AddressPolicy(refuse_internal=True))
    try:
        with pytest.raises(addresses.RefusedAddress):
            await resolver.resolve("localhost", 80)
    finally:
        await resolver.close()


# The dispatcher: queues off the reconcile path


def _dispatcher(settings: delivery.Settings) -> tuple[delivery.Dispatcher, CollectorRegistry]:
    registry = CollectorRegistry()
    return delivery.Dispatcher(settings, metrics=OperatorMetrics(registry)).start(), registry


def _wait(predicate: Callable[[], object], what: str, timeout_seconds: float = 15.0) -> None:
    """Poll until `predicate()` is truthy (the dispatcher works on its own thread)."""
    deadline = time.monotonic() + timeout_seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def test_a_receiver_that_hangs_delays_only_its_own_queue(
    raw: list[RawReceiver], webhook_receiver: WebhookReceiver
) -> None:
    stuck = RawReceiver("hang")
    raw.append(stuck)
    dispatcher, registry = _dispatcher(
        delivery.Settings(attempt_timeout_seconds=60, shutdown_grace_seconds=0)
    )
    try:
        dispatcher.submit(_delivery(stuck.url, receiver="ml/a/team"))
        stuck.wait_connected()
        dispatcher.submit(_delivery(webhook_receiver.url, receiver="ml/b/team"))
        _wait(lambda: webhook_receiver.calls, "the second receiver's delivery")
        # the receiver records the call before the dispatcher counts it: poll for the counts
        _wait(
            lambda: (
                registry.get_sample_value(
                    "trainguard_operator_webhook_deliveries_total", {"result": "success"}
                )
                == 1
                and registry.get_sample_value("trainguard_operator_webhook_queued") == 1
            ),
            "the second delivery counted and only the stuck one left queued",
        )
        assert stuck.open_connections == 1, "the first delivery is still waiting for its answer"
    finally:
        dispatcher.close()


def test_a_full_queue_drops_new_deliveries_and_counts_them(raw: list[RawReceiver]) -> None:
    stuck = RawReceiver("hang")
    raw.append(stuck)
    failed: list[str] = []
    settings = delivery.Settings(attempt_timeout_seconds=60, queue_size=2, shutdown_grace_seconds=0)
    dispatcher, registry = _dispatcher(settings)
    try:
        for _ in range(4):
            dispatcher.submit(_delivery(stuck.url, failed=failed))
        stuck.wait_connected()
        _wait(lambda: len(failed) == 2, "two drops")
        assert all(f.startswith("dropped: 2 deliveries already wait for this webhook") for f in failed)
        assert (
            registry.get_sample_value("trainguard_operator_webhook_dropped_total", {"reason": "queue_full"})
            == 2
        )
        assert dispatcher.pending() == 2
    finally:
        dispatcher.close()
    # What was still queued when the operator stopped is dropped too, counted apart.
    assert registry.get_sample_value("trainguard_operator_webhook_dropped_total", {"reason": "shutdown"}) == 2
    assert registry.get_sample_value("trainguard_operator_webhook_queued") == 0
    assert len(failed) == 4


def test_a_delivery_given_up_calls_back_once_with_the_reason(tmp_path: Path) -> None:
    failed: list[str] = []
    dispatcher, registry = _dispatcher(FAST)
    try:
        dispatcher.submit(_delivery(f"file://{tmp_path}/secret", failed=failed))
        _wait(lambda: failed, "the failure callback")
    finally:
        dispatcher.close()
    assert failed == ["only http and https URLs are allowed (found scheme 'file')"]
    assert (
        registry.get_sample_value("trainguard_operator_webhook_deliveries_total", {"result": "failure"}) == 1
    )
