"""Each storage backend declares its scheme, settings and credentials, and the registry keeps them apart."""

from __future__ import annotations

import importlib

import pytest

from trainguard.store import backends, errors
from trainguard.store.backends import declaration


def test_every_module_of_the_package_declares_a_backend_whose_class_exists() -> None:
    found = backends.declared()
    assert set(found) >= {"file", "s3"}
    for scheme, backend in found.items():
        module, name = backend.store_class.rsplit(".", 1)
        assert callable(getattr(importlib.import_module(module), name)), scheme


def test_s3_settings_become_its_variables_and_its_class_arguments() -> None:
    s3 = backends.for_uri("s3://bucket/run")
    values = {"endpoint": "http://seaweed:8333", "region": ""}
    assert s3.env(values) == {"AWS_ENDPOINT_URL": "http://seaweed:8333"}
    assert s3.options(values) == {"endpoint_url": "http://seaweed:8333"}
    assert s3.read_env({"AWS_ENDPOINT_URL": "http://a", "AWS_REGION": "eu-west-3"}) == {
        "endpoint": "http://a",
        "region": "eu-west-3",
    }
    # the hook's own older name wins over the backend's variable
    env = {"AWS_ENDPOINT_URL": "http://a", "TRAINGUARD_S3_ENDPOINT": "http://b"}
    assert s3.read_env(env, prefix="TRAINGUARD_") == {"endpoint": "http://b"}
    assert s3.fold_aliases({"s3_endpoint": "http://b", "x": 1}, into="store") == {
        "x": 1,
        "store": {"endpoint": "http://b"},
    }


def test_a_plain_path_is_served_by_the_file_backend_and_an_unknown_scheme_names_the_known_ones() -> None:
    assert backends.for_uri("/tmp/run").scheme == "file"
    with pytest.raises(errors.UnknownScheme, match=r"gs:// .*file://, s3://"):
        backends.for_uri("gs://bucket/run")


def test_a_backend_that_reuses_another_backends_setting_name_is_refused_and_not_registered() -> None:
    clashing = declaration.Backend(
        scheme="gs",
        store_class="nowhere.GcsStore",
        uri_pattern=r"gs://.+",
        uri_example="gs://bucket/prefix",
        settings=(
            declaration.Setting(
                name="endpoint", env="STORAGE_EMULATOR_HOST", option="endpoint", description="x"
            ),
        ),
    )
    with pytest.raises(errors.StoreError, match=r"gs:// backend declares setting 'endpoint'.*s3:// backend"):
        backends.register(clashing)
    assert "gs" not in backends.declared()


def test_an_older_setting_name_of_another_backend_is_dropped_not_refused() -> None:
    """A sidecar config of a file:// run may still carry `s3_endpoint` (it used to be a field of every config)."""
    doc = {"run_uri": "file:///runs/r", "s3_endpoint": "http://a", "rank": 0}
    assert backends.fold_older_names(doc, uri_key="run_uri", into="store") == {
        "run_uri": "file:///runs/r",
        "rank": 0,
    }
    doc = {"run_uri": "s3://b/r", "s3_endpoint": "http://a"}
    assert backends.fold_older_names(doc, uri_key="run_uri", into="store") == {
        "run_uri": "s3://b/r",
        "store": {"endpoint": "http://a"},
    }
