"""The image: hadolint clean, built by dev/build-image.sh, and runnable the way the chart runs it.

The build (buildah, vfs storage, chroot isolation, a local debootstrap base) takes two to four
minutes, the first time on a machine including the base. Without buildah/debootstrap (dev/setup.sh
--full installs them) or without root the build tests are skipped with that reason. The built image
is run like a pod with `readOnlyRootFilesystem: true`: its root mounted read-only, /tmp a tmpfs, the
image's own user, environment and entrypoint, in a private mount namespace (`unshare`).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.tooling import ROOT, find_tool, free_port, one, render, run_tool

STORAGE = ROOT / ".tools" / "containers"
BUILD_TIMEOUT_SECONDS = 900
pytestmark = pytest.mark.timeout(BUILD_TIMEOUT_SECONDS + 120)
"""The first test that needs the image pays for its build in its setup: the suite's 300 s default would
fail it on a slow or busy machine while the build itself is within its own limit."""


@dataclass(frozen=True)
class Image:
    tag: str
    config: dict[str, Any]

    @property
    def user(self) -> tuple[int, int]:
        uid, _, gid = str(self.config["User"]).partition(":")
        return int(uid), int(gid or uid)


def _buildah(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run_tool(["buildah", "--storage-driver", "vfs", "--root", str(STORAGE), "--runroot", str(STORAGE / "run"),
                     *args], check=check)  # fmt: skip


def test_the_dockerfile_is_hadolint_clean() -> None:
    proc = run_tool([find_tool("hadolint"), str(ROOT / "Dockerfile")], check=False)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_the_build_context_is_only_what_the_dockerfile_copies() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignore[ignore.index("*") + 1 :][:5] == [
        "!requirements/image.lock",
        "!pyproject.toml",
        "!README.md",
        "!LICENSE",
        "!trainguard/",
    ]


@pytest.fixture(scope="module")
def image() -> Iterator[Image]:
    missing = [tool for tool in ("buildah", "debootstrap", "unshare", "chroot") if not shutil.which(tool)]
    if missing:
        pytest.skip(
            f"image build skipped: {', '.join(missing)} not installed (dev/setup.sh --full installs them)"
        )
    if os.geteuid() != 0:
        pytest.skip("image build skipped: buildah with vfs storage and chroot isolation needs root")
    tag = f"localhost/trainguard:test-{os.getpid()}"
    started = time.monotonic()
    proc = subprocess.run([str(ROOT / "dev" / "build-image.sh"), "--root", str(STORAGE), "--tag", tag],
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT_SECONDS, check=False)  # fmt: skip
    assert proc.returncode == 0, f"dev/build-image.sh failed:\n{proc.stderr[-5000:]}"
    assert proc.stdout.strip().splitlines()[-1] == tag
    print(f"image {tag} built in {time.monotonic() - started:.0f} s")
    inspected = json.loads(_buildah("inspect", "--type", "image", tag).stdout)
    try:
        yield Image(tag=tag, config=inspected["OCIv1"]["config"])
    finally:
        _buildah("rmi", tag, check=False)


@pytest.fixture(scope="module")
def rootfs(image: Image) -> Iterator[Path]:
    """The image's filesystem, from a working container (removed afterwards)."""
    container = _buildah("from", "--pull-never", image.tag).stdout.strip()
    try:
        yield Path(_buildah("mount", container).stdout.strip())
    finally:
        _buildah("umount", container, check=False)
        _buildah("rm", container, check=False)


def run_read_only(image: Image, rootfs: Path, args: list[str], *, tmp: Path, files: dict[str, str] | None = None,
                  entrypoint: list[str] | None = None) -> subprocess.Popen[str]:  # fmt: skip
    """Start the image's entrypoint (or `entrypoint`) with `args` like a restricted pod: read-only root, /tmp a
    tmpfs holding `files`, the image's user and environment only. Returns the process (its own session)."""
    staging = tmp / "staging"
    staging.mkdir(exist_ok=True)
    for name, text in (files or {}).items():
        (staging / name).write_text(text)
    mountpoint = tmp / "root"
    mountpoint.mkdir(exist_ok=True)
    uid, gid = image.user
    command = [*(entrypoint or image.config["Entrypoint"]), *args]
    script = "\n".join([
        "set -e",
        f'ro="{mountpoint}"',
        f'mount --bind "{rootfs}" "$ro"',
        'mount -o remount,bind,ro "$ro"',
        'mount -t tmpfs -o size=64m,mode=1777 tmpfs "$ro/tmp"',
        'mount -t proc proc "$ro/proc"',
        'mount --rbind /dev "$ro/dev"',
        f'cp -r "{staging}/." "$ro/tmp/"',
        f'exec chroot --userspec={uid}:{gid} "$ro" /usr/bin/env -i '
        + shlex.join([*image.config.get("Env", []), *command]),
    ])  # fmt: skip
    return subprocess.Popen(["unshare", "--mount", "--fork", "--kill-child", "sh", "-c", script],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip


def _finish(proc: subprocess.Popen[str], *, timeout_seconds: float = 60) -> str:
    out, _ = proc.communicate(timeout=timeout_seconds)
    return out


@pytest.mark.slow
def test_the_image_config_is_non_root_with_the_trainguard_entrypoint(image: Image) -> None:
    uid, gid = image.user
    assert uid > 0 and gid > 0
    assert image.config["Entrypoint"] == ["/opt/trainguard/bin/trainguard"]
    env = dict(item.split("=", 1) for item in image.config["Env"])
    assert env["HOME"] == "/tmp" and env["TMPDIR"] == "/tmp" and env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert {"9400/tcp", "9401/tcp", "8080/tcp"} <= set(image.config.get("ExposedPorts", {}))
    # The chart runs the operator as the image's user, so runAsNonRoot holds without a passwd entry.
    pod = one(render(), "Deployment")["spec"]["template"]["spec"]
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (uid, gid)


@pytest.mark.slow
def test_the_final_stage_has_no_build_tools_or_installers(rootfs: Path) -> None:
    venv = rootfs / "opt" / "trainguard"
    assert (venv / "bin" / "trainguard").exists()
    found = [
        str(p.relative_to(rootfs))
        for p in [*venv.glob("bin/pip*"), *venv.glob("lib/python3*/site-packages/pip")]
    ]
    for tool in ("gcc", "cc", "c++", "g++", "make", "ld"):
        found += [f"{d}/{tool}" for d in ("usr/bin", "usr/local/bin") if (rootfs / d / tool).exists()]
    assert not found, f"build tools in the final image: {found}"
    assert not list(venv.glob("lib/python3*/site-packages/torch")), "torch must not be in the image"


@pytest.mark.slow
def test_the_image_prints_its_version_on_a_read_only_root_as_its_user(
    image: Image, rootfs: Path, tmp_path: Path
) -> None:
    from trainguard import _version

    out = _finish(run_read_only(image, rootfs, ["--version"], tmp=tmp_path))
    assert out.strip().splitlines()[-1] == f"trainguard {_version.__version__}", out
    probe = (
        "import os, pathlib\n"
        "print('uid', os.getuid())\n"
        "pathlib.Path('/tmp/ok').write_text('x'); print('tmp writable')\n"
        "try:\n    pathlib.Path('/opt/trainguard/x').write_text('x')\nexcept OSError as e:\n    print('root', e.strerror)\n"
    )  # fmt: skip
    out = _finish(
        run_read_only(image, rootfs, ["-c", probe], tmp=tmp_path, entrypoint=["/opt/trainguard/bin/python3"])
    )
    assert f"uid {image.user[0]}" in out and "tmp writable" in out and "root Read-only file system" in out, (
        out
    )


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status, resp.read().decode()
    except OSError:
        return 0, ""


@pytest.mark.slow
def test_the_image_runs_the_sidecar_and_serves_healthz_and_metrics(
    image: Image, rootfs: Path, tmp_path: Path
) -> None:
    port = free_port()
    config = {"run_uri": "file:///tmp/run", "rank": 0, "metrics_port": port, "metrics_address": "127.0.0.1",
              "stop_file": "/tmp/stop", "checkpoint": False}  # fmt: skip
    proc = run_read_only(image, rootfs, ["sidecar", "--config", "/tmp/sidecar.yaml"], tmp=tmp_path,
                         files={"sidecar.yaml": yaml.safe_dump(config)})  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        status, body = _get(f"http://127.0.0.1:{port}/healthz")
        while status != 200:
            assert proc.poll() is None, f"the sidecar exited with {proc.returncode}:\n{proc.communicate()[0]}"
            assert time.monotonic() < deadline, "the sidecar's /healthz did not answer 200 within 60 s"
            time.sleep(0.2)
            status, body = _get(f"http://127.0.0.1:{port}/healthz")
        health = json.loads(body)
        assert health["following"] is True and health["ended"] is False, health
        status, metrics = _get(f"http://127.0.0.1:{port}/metrics")
        assert status == 200 and "trainguard_rule_triggered" in metrics
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        _finish(proc, timeout_seconds=30)
