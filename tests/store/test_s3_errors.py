"""S3Store against failures from a real server: throttling, 5xx, dead endpoints, bad credentials, missing buckets.

Throttling and 5xx answers come from a fault proxy in front of SeaweedFS (a real HTTP socket
answering real S3 error documents); credentials and buckets are checked by SeaweedFS itself.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from trainguard.store import errors
from trainguard.store.backends import open_store
from trainguard.store.backends.s3 import RETRYABLE_ERRORS, S3Store

FAST = {"base_backoff_seconds": 0.001, "max_backoff_seconds": 0.01}


@pytest.fixture
def proxied(fault_proxy: Any, s3_bucket: str, s3_env: dict[str, str]) -> S3Store:
    return S3Store(f"s3://{s3_bucket}/run", endpoint_url=fault_proxy.url, **FAST)


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (503, "SlowDown"),
        (503, ""),
        (500, "InternalError"),
        (502, ""),
        (429, "TooManyRequests"),
        (400, "RequestTimeout"),
    ],
)
def test_throttling_and_server_errors_are_retried_until_the_request_succeeds(
    proxied: S3Store, fault_proxy: Any, caplog: pytest.LogCaptureFixture, status: int, code: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="trainguard.store.backends.s3")
    fault_proxy.fail_next(2, status, code)
    proxied.put("rank-00000/seg-1.npz", b"payload")
    assert [m for m, _ in fault_proxy.requests] == ["PUT", "PUT", "PUT"]
    assert proxied.get("rank-00000/seg-1.npz") == b"payload"
    messages = [r.getMessage() for r in caplog.records if r.name == "trainguard.store.backends.s3"]
    assert any("attempt 1 of 5 failed" in m for m in messages), messages
    assert any("attempt 2 of 5 failed" in m for m in messages), messages
    assert not any("attempt 3 of 5" in m for m in messages), messages


def test_get_and_list_are_retried_as_well(proxied: S3Store, fault_proxy: Any) -> None:
    proxied.put("a", b"1")
    fault_proxy.fail_next(1)
    assert proxied.get("a") == b"1"
    fault_proxy.fail_next(1)
    assert proxied.list() == ["a"]
    fault_proxy.fail_next(1)
    assert proxied.exists("a")


def test_retries_stop_after_max_attempts_with_a_store_error_chained_from_the_last_answer(
    fault_proxy: Any, s3_bucket: str, s3_env: dict[str, str]
) -> None:
    store = S3Store(f"s3://{s3_bucket}/run", endpoint_url=fault_proxy.url, max_attempts=3, **FAST)
    fault_proxy.fail_next(10)
    with pytest.raises(errors.StoreError) as info:
        store.put("rank-00000/seg-9.npz", b"x")
    assert len(fault_proxy.requests) == 3
    message = str(info.value)
    assert f"s3://{s3_bucket}/run/rank-00000/seg-9.npz" in message
    assert "after 3 attempts" in message and "SlowDown" in message
    assert isinstance(info.value.__cause__, ClientError)
    assert not isinstance(info.value, (errors.NotFound, errors.AccessDenied))


def test_a_dead_endpoint_is_retried_then_reported_naming_bucket_key_and_endpoint(
    s3_env: dict[str, str],
) -> None:
    import socket

    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    slept: list[float] = []
    store = S3Store(
        "s3://some-bucket/p", endpoint_url=f"http://127.0.0.1:{port}", max_attempts=4, sleep=slept.append
    )
    with pytest.raises(errors.StoreError, match=rf"s3://some-bucket/p/k at http://127.0.0.1:{port}") as info:
        store.get("k")
    assert isinstance(info.value.__cause__, EndpointConnectionError)
    assert len(slept) == 3  # between four attempts
    assert slept[0] < slept[2] <= store.max_backoff_seconds  # backoff grows


def test_a_missing_bucket_is_not_found_with_a_hint_and_is_not_retried(
    s3_server: Any, fault_proxy: Any, s3_env: dict[str, str]
) -> None:
    store = S3Store("s3://no-such-bucket-here/run", endpoint_url=fault_proxy.url, **FAST)
    for op in (lambda: store.put("k", b"1"), lambda: store.get("k"), lambda: store.list()):
        with pytest.raises(errors.NotFound) as info:
            op()
        assert str(info.value) == (
            f"bucket no-such-bucket-here does not exist at {fault_proxy.url}; "
            f"create it or fix the URI s3://no-such-bucket-here/run"
        )
    assert len(fault_proxy.requests) == 3  # one request each: never retried


@pytest.mark.parametrize(
    ("override", "code"),
    [
        ({"AWS_SECRET_ACCESS_KEY": "not-the-secret"}, "SignatureDoesNotMatch"),
        ({"AWS_ACCESS_KEY_ID": "nobody"}, "InvalidAccessKeyId"),
    ],
)
def test_wrong_credentials_raise_access_denied_with_a_credentials_hint_without_retrying(
    s3_bucket: str,
    fault_proxy: Any,
    s3_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    override: dict[str, str],
    code: str,
) -> None:
    for name, value in override.items():
        monkeypatch.setenv(name, value)
    store = S3Store(f"s3://{s3_bucket}/run", endpoint_url=fault_proxy.url, **FAST)
    for op in (
        lambda: store.put("k", b"1"),
        lambda: store.get("k"),
        lambda: store.list(),
        lambda: store.exists("k"),
    ):
        with pytest.raises(errors.AccessDenied, match="AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") as info:
            op()
        assert s3_bucket in str(info.value)
    assert code in str(pytest.raises(errors.AccessDenied, store.list).value)
    assert len(fault_proxy.requests) == 5


def test_missing_credentials_raise_access_denied(
    s3_bucket: str, s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    store = open_store(f"s3://{s3_bucket}/run")
    with pytest.raises(errors.AccessDenied, match="NoCredentialsError.*AWS_ACCESS_KEY_ID"):
        store.get("k")


def test_a_missing_key_is_not_found_and_not_retried(proxied: S3Store, fault_proxy: Any) -> None:
    with pytest.raises(errors.NotFound, match="run/missing does not exist"):
        proxied.get("missing")
    assert not proxied.exists("missing")
    assert len(fault_proxy.requests) == 2


def test_the_endpoint_argument_wins_over_aws_endpoint_url(
    fault_proxy: Any, s3_bucket: str, s3_env: dict[str, str]
) -> None:
    store = open_store(f"s3://{s3_bucket}/run", endpoint_url=fault_proxy.url)
    store.put("k", b"1")
    # Path-style addressing: the bucket is in the path, not in the host name.
    assert fault_proxy.requests == [("PUT", f"/{s3_bucket}/run/k")]


def test_the_retryable_set_holds_throttling_5xx_and_connection_errors_but_not_client_errors() -> None:
    assert {
        "SlowDown",
        "RequestTimeout",
        "HTTP 5xx",
        "ConnectionError",
        "HTTPClientError",
    } <= RETRYABLE_ERRORS
    assert not {"NoSuchBucket", "NoSuchKey", "AccessDenied", "HTTP 403", "HTTP 404"} & RETRYABLE_ERRORS


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_attempts": 0}, "max_attempts must be at least 1, got 0"),
        ({"list_page_size": 1001}, "list_page_size must be between 1 and 1000, got 1001"),
        ({"base_backoff_seconds": -1}, "base_backoff_seconds must not be negative, got -1"),
        ({"read_timeout_seconds": 0}, "read_timeout_seconds must be positive, got 0"),
    ],
)
def test_invalid_settings_are_refused_naming_the_setting(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        S3Store("s3://b/p", endpoint_url="http://127.0.0.1:9", **kwargs)


@pytest.mark.parametrize("uri", ["s3://", "s3:///prefix"])
def test_an_uri_without_bucket_is_refused(uri: str) -> None:
    with pytest.raises(errors.StoreError, match="names no bucket"):
        S3Store(uri, endpoint_url="http://127.0.0.1:9")


def test_explicit_credentials_replace_the_environment(
    s3_server: Any, s3_bucket: str, s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    store = open_store(
        f"s3://{s3_bucket}/run", access_key_id=s3_server.access_key, secret_access_key=s3_server.secret_key
    )
    store.put("k", b"1")
    assert store.get("k") == b"1"
    with pytest.raises(errors.AccessDenied):  # the environment's (wrong) secret
        open_store(f"s3://{s3_bucket}/run").get("k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    with pytest.raises(errors.AccessDenied):  # explicit wrong ones win over the right environment
        open_store(f"s3://{s3_bucket}/run", access_key_id="nobody", secret_access_key="nothing").get("k")
    with pytest.raises(ValueError, match="access_key_id and secret_access_key together"):
        S3Store(f"s3://{s3_bucket}/run", access_key_id="x")
