"""dev/k8s/common.sh: the helpers the test cluster's scripts share, run against a stand-in kubectl.

`established` waits for CRDs; a CRD the API server created a moment ago has `status.conditions: null`
and `kubectl wait` fails at once on it instead of waiting (seen when a loaded machine starts the
controllers): the helper must retry through that answer and still give up, naming the file, when the
CRDs never become established.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.deploy.tooling import ROOT

NULL_CONDITIONS = (
    "error: .status.conditions accessor error: <nil> is of the type <nil>, expected []interface{}"
)


def _established(tmp_path: Path, failures: int, limit_s: int) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run `established crd.yaml` with a kubectl that fails `failures` times as a fresh CRD makes it fail."""
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    calls = tmp_path / "calls"
    (fake / "kubectl").write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {calls}\n'
        f'[ "$(wc -l < {calls})" -gt {failures} ] && exit 0\n'
        f"echo '{NULL_CONDITIONS}' >&2; exit 1\n"
    )
    (fake / "kubectl").chmod(0o755)
    script = f". {ROOT}/dev/k8s/common.sh; PATH={fake}:$PATH; established {tmp_path}/crd.yaml"
    env = {**os.environ, "TRAINGUARD_K8S_HOME": str(tmp_path / "k8s"), "TG_K8S_CRD_WAIT_S": str(limit_s)}
    proc = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    n = len(calls.read_text().splitlines()) if calls.exists() else 0
    return proc, n


def test_a_fresh_crd_whose_conditions_are_null_is_waited_for_not_failed(tmp_path: Path) -> None:
    proc, calls = _established(tmp_path, failures=3, limit_s=30)
    assert proc.returncode == 0, proc.stderr
    assert calls == 4
    assert proc.stderr == ""


def test_crds_never_established_fail_with_the_file_and_kubectls_answer(tmp_path: Path) -> None:
    proc, calls = _established(tmp_path, failures=10**6, limit_s=1)
    assert proc.returncode == 1
    assert calls >= 2
    assert f"the CRDs of {tmp_path}/crd.yaml are not established after 1 s" in proc.stderr
    assert "status.conditions accessor error" in proc.stderr
