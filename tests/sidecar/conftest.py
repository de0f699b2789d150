"""Fixtures of the evaluator tests: the emulated Kubernetes API (`kube`, from tests/kube.py)."""

from tests.kube import kube  # noqa: F401 - a fixture, used by name
