"""Helpers of the deployment tests: the chart's paths, helm/promtool binaries, and rendering the chart.

The binaries come from `dev/setup.sh --full` (helm into .tools/bin, promtool and prometheus from
apt). A missing one fails the test with the command that installs it: skipping would hide that the
chart, the alerts or the image went unchecked.
"""

from __future__ import annotations

import copy
import functools
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "trainguard"
ALERTS = CHART / "files" / "alerts.yaml"
DASHBOARDS = sorted((CHART / "files" / "dashboards").glob("*.json"))
PROMTOOL_TESTS = sorted((CHART / "tests-promtool").glob("*.yaml"))
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))


def find_tool(name: str) -> str:
    """Return the path of `name` from .tools/bin, the venv or PATH; fail with the installing command."""
    for candidate in (ROOT / ".tools" / "bin" / name, Path(sys.executable).parent / name):
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if not found:
        pytest.fail(
            f"`{name}` is not installed: run dev/setup.sh --full (it installs helm, promtool and prometheus)"
        )
    return found


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_tool(
    args: Sequence[str], *, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run a command, capture its output, and on failure (with check) fail the test showing both streams."""
    proc = subprocess.run(
        list(args),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "HELM_CACHE_HOME": str(ROOT / ".tools" / "helm-cache")},
    )
    if check and proc.returncode != 0:
        pytest.fail(
            f"{' '.join(args)} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


def helm_template(
    *,
    values: Sequence[Path] = (),
    sets: Sequence[str] = (),
    namespace: str = "trainguard",
    release: str = "tg",
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run `helm template` on the chart with values files and --set options."""
    args = [find_tool("helm"), "template", release, str(CHART), "--namespace", namespace]
    for v in values:
        args += ["-f", str(v)]
    for s in sets:
        args += ["--set", s]
    return run_tool(args, check=check)


def render(*, values: Sequence[Path] = (), sets: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Render the chart and return its objects (empty documents dropped); a fresh copy on every call."""
    return copy.deepcopy(_render(tuple(values), tuple(sets)))


@functools.lru_cache(maxsize=64)
def _render(values: tuple[Path, ...], sets: tuple[str, ...]) -> list[dict[str, Any]]:
    out = helm_template(values=values, sets=sets).stdout
    # The C loader: the rendered CRD alone is ~190 kB of YAML.
    return [doc for doc in yaml.load_all(out, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if doc]


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """Return the rendered objects of one kind."""
    return [o for o in objects if o.get("kind") == kind]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """Return the single rendered object of a kind; fail if there is not exactly one."""
    found = by_kind(objects, kind)
    assert len(found) == 1, (
        f"expected one {kind}, rendered {len(found)}: {[o['metadata']['name'] for o in found]}"
    )
    return found[0]
