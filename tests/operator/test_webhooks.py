"""Webhook delivery against a real local HTTP server: retries with backoff, final 4xx, no URL in logs."""

from __future__ import annotations

import logging

import pytest

from tests.operator.conftest import WebhookReceiver
from trainguard.api.debugjob import WebhookFormat
from trainguard.operator import webhooks

EVENT = webhooks.RuleEvent(
    namespace="ml", debugjob="llm", uid="u1", rule="exploding_tensor", action="stop", severity="critical",
    step=1200, rank=3, message="grad/fc.weight l2 4.1e5 above 1e4", time="2026-11-22T05:00:00Z",
)  # fmt: skip


def test_generic_payload_is_versioned_and_names_rule_and_step() -> None:
    body = webhooks.payload(EVENT, WebhookFormat.GENERIC)
    assert body["kind"] == "TrainGuardRuleEvent" and body["version"] == "v1"
    assert body["event"]["rule"] == "exploding_tensor" and body["event"]["step"] == 1200
    assert "rank 3" in body["summary"] and "suspended" in body["summary"]


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


def test_retryable_failures_are_retried_with_growing_backoff(
    webhook_receiver: WebhookReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    webhook_receiver.statuses = [503, 429]
    pauses: list[float] = []
    with caplog.at_level(logging.INFO, logger="trainguard.operator.webhooks"):
        ok = webhooks.deliver(
            webhook_receiver.url, {"a": 1}, name="alerts", base_backoff_seconds=0.5, sleep=pauses.append
        )
    assert ok and webhook_receiver.calls == [{"a": 1}]
    assert len(webhook_receiver.paths) == 3
    assert pauses == [0.5, 1.0]
    assert "attempt 1 of 5 failed: HTTP 503" in caplog.text and "delivered (attempt 3 of 5)" in caplog.text
    assert "secret-token-123" not in caplog.text


def test_client_errors_are_final(webhook_receiver: WebhookReceiver) -> None:
    webhook_receiver.statuses = [404]
    pauses: list[float] = []
    assert not webhooks.deliver(webhook_receiver.url, {"a": 1}, name="alerts", sleep=pauses.append)
    assert len(webhook_receiver.paths) == 1 and pauses == []


def test_attempts_are_bounded_and_the_url_never_reaches_the_log(
    webhook_receiver: WebhookReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    url = webhook_receiver.url
    webhook_receiver.close()  # nothing listens any more: connection refused on every attempt
    pauses: list[float] = []
    with caplog.at_level(logging.INFO, logger="trainguard.operator.webhooks"):
        ok = webhooks.deliver(url, {"a": 1}, name="alerts", max_attempts=3, base_backoff_seconds=1, max_backoff_seconds=1.5,
                              sleep=pauses.append)  # fmt: skip
    assert not ok and pauses == [1, 1.5]
    assert "gave up after 3 attempts" in caplog.text
    assert "secret-token-123" not in caplog.text and "127.0.0.1" not in caplog.text
