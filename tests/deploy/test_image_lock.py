"""requirements/image.lock: what the image installs, every package pinned with hashes and equal to what the tests ran.

The image build (`tests/deploy/test_image.py`) proves pip accepts the lock with --require-hashes; these
checks keep it complete and current without a build.
"""

from __future__ import annotations

import importlib.metadata
import re

from packaging.utils import canonicalize_name

from tests.deploy.tooling import ROOT

LOCK = ROOT / "requirements" / "image.lock"
ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\]+)")


def _entries() -> dict[str, tuple[str, list[str]]]:
    """Return {name: (version, hashes)} of the lock."""
    entries: dict[str, tuple[str, list[str]]] = {}
    current = ""
    for line in LOCK.read_text().splitlines():
        if match := ENTRY.match(line):
            current = canonicalize_name(match.group(1))
            entries[current] = (match.group(2), [])
        elif "--hash=" in line:
            entries[current][1].append(line.split("--hash=", 1)[1].rstrip(" \\"))
    return entries


def _pins(name: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements" / name).read_text().splitlines():
        if match := ENTRY.match(line):
            pins[canonicalize_name(match.group(1))] = match.group(2)
    return pins


def test_every_locked_package_has_an_exact_version_and_sha256_hashes() -> None:
    entries = _entries()
    assert len(entries) > 30, "the lock holds the whole dependency tree, not only the top-level pins"
    for name, (version, hashes) in entries.items():
        assert hashes and all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), (
            f"{name}=={version}: {hashes}"
        )


def test_the_lock_keeps_the_top_level_pins() -> None:
    entries = _entries()
    for name, version in {**_pins("runtime.txt"), **_pins("build.txt")}.items():
        assert entries.get(name, ("missing",))[0] == version, f"{name}: run dev/lock-image.sh"


def test_the_lock_is_what_the_tests_run_with() -> None:
    differ = {
        name: (version, importlib.metadata.version(name))
        for name, (version, _) in _entries().items()
        if importlib.metadata.version(name) != version
    }
    assert not differ, f"locked vs installed versions differ, run dev/lock-image.sh: {differ}"


def test_the_image_installs_the_lock_with_required_hashes() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install --no-cache-dir --require-hashes --no-deps -r requirements/image.lock" in dockerfile
    assert "COPY requirements/image.lock requirements/image.lock" in dockerfile
    assert "--no-build-isolation ." in dockerfile, "the package is built with the locked setuptools"
