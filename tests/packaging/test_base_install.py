"""The wheel, built as a user's `python -m build` builds it, installed into a fresh venv with the base
dependencies only, trains a PyTorch model with the hook.

The fresh venv gets no network and no system site-packages. What it can import besides the wheel is
the base requirement set (numpy, pydantic and theirs) and torch with its own requirements, each taken
from the test venv as it is installed there: a `.pth` file points at a folder of links to exactly
those distributions (package folders and their `.dist-info`), so torch is not downloaded again and
boto3, botocore, prometheus_client, PyYAML, kopf and kubernetes are not there. The tests check that
absence first, so a passing run means the hook really ran without them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASE_REQUIREMENTS = ("numpy", "pydantic")
"""What `pip install trainguard` brings: the hook's own needs. torch is the user's."""
EXTRAS_ONLY = ("boto3", "botocore", "prometheus_client", "yaml", "kopf", "kubernetes")
"""Import names that must come from an extra, never from the base install."""

pytestmark = pytest.mark.slow


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(names: tuple[str, ...]) -> dict[str, metadata.Distribution]:
    """The installed distributions `names` need, with their requirements (markers for this interpreter,
    no extras). Requirements this venv does not have (torch's CUDA wheels on a CPU build) are skipped."""
    from packaging.requirements import Requirement

    found: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = _canonical(todo.pop())
        if name in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        found[name] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return found


def _link_distributions(dists: dict[str, metadata.Distribution], into: Path) -> None:
    """Link each distribution's top-level files and folders (its code and its .dist-info) into `into`."""
    into.mkdir()
    for dist in dists.values():
        base = Path(str(dist.locate_file("")))
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in sorted(tops):
            source = base / top
            if top.endswith(".pth") or top == "__pycache__" or not source.exists():
                continue
            target = into / top
            if not target.exists():
                target.symlink_to(source, target_is_directory=source.is_dir())


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


def _venv_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "TRAINGUARD_", "VIRTUAL_ENV"))}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _build_wheel(work: Path, **env: str) -> tuple[Path, str]:
    """`python -m build --wheel` of a clean copy of the source (no in-place kernel, no build/ folder);
    returns the wheel and what the build printed."""
    src = work / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "trainguard", src / "trainguard", ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    )
    # --no-isolation: the test venv's setuptools builds it, so the test needs no package index.
    out = _run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(work / "dist"),
            str(src),
        ],
        cwd=work,
        env={**os.environ, **env},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    (built,) = (work / "dist").glob("trainguard-*.whl")
    return built, out.stdout + out.stderr


def _wheel_files(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        return zf.namelist()


KERNEL = re.compile(r"trainguard/capture/_cstats\..*\.so")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built, printed = _build_wheel(tmp_path_factory.mktemp("build"))
    assert "Deprecat" not in printed, "the build printed a deprecation warning"
    return built


@pytest.fixture(scope="module")
def base_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv holding the wheel, the base requirements and torch, and nothing else."""
    work = tmp_path_factory.mktemp("venv")
    venv = work / "venv"
    out = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=work)
    assert out.returncode == 0, out.stderr
    python = venv / "bin" / "python"
    _link_distributions(_closure((*BASE_REQUIREMENTS, "torch")), work / "deps")
    site = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=work
        ).stdout.strip()
    )
    (site / "trainguard-test-deps.pth").write_text(str(work / "deps") + "\n")
    install = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            str(wheel),
        ],
        cwd=work,
        env=_venv_env(),
    )
    assert install.returncode == 0, install.stdout + install.stderr
    yield venv


def test_the_wheel_carries_the_c_kernel_the_license_and_the_spdx_expression(wheel: Path) -> None:
    names = _wheel_files(wheel)
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert any(KERNEL.fullmatch(n) for n in names), names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: Apache-2.0" in meta
    base = sorted(
        line.split(":", 1)[1].strip()
        for line in meta.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    )
    assert [re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0] for r in base] == list(BASE_REQUIREMENTS)


def test_without_a_c_compiler_the_wheel_builds_without_the_kernel(tmp_path: Path) -> None:
    # CC=/bin/false: the compiler exists and fails, as a missing one makes the build fail
    built, printed = _build_wheel(tmp_path, CC="/bin/false")
    assert 'building extension "trainguard.capture._cstats" failed' in printed
    assert not any(KERNEL.fullmatch(n) for n in _wheel_files(built))


def test_the_base_venv_lacks_every_extra(base_venv: Path) -> None:
    probe = "import importlib.util, sys; print([m for m in sys.argv[1:] if importlib.util.find_spec(m)])"
    out = _run([str(base_venv / "bin" / "python"), "-c", probe, *EXTRAS_ONLY], cwd=base_venv, env=_venv_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    check = _run(
        [sys.executable, "-m", "pip", "--python", str(base_venv / "bin" / "python"), "check"],
        cwd=base_venv,
        env=_venv_env(),
    )
    assert "trainguard" not in check.stdout, check.stdout


TRAIN = textwrap.dedent(
    """
    import sys
    import numpy as np
    import torch
    import trainguard
    import trainguard.torch as tg
    from trainguard.capture.torch import c_kernel

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    with tg.Hook(sys.argv[1], save_interval=1) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(30):
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            hook.record_scalar("loss", loss)
    with trainguard.Recorder(sys.argv[2], save_interval=1) as rec:
        for step in range(10):
            rec.record_tensor("w", np.full((4, 4), float(step), dtype=np.float32), collection="weights")
            rec.record_scalar("loss", 1.0 / (step + 1))
            rec.step()

    run = trainguard.open_run(sys.argv[1])
    steps, l2 = run.series("grad/0.weight", "l2")
    assert list(steps) == list(range(30)), steps
    assert np.isfinite(l2).all() and (l2 > 0).all()
    assert run.ended() is not None and run.ended().status == "ok", run.ended()
    assert len(trainguard.open_run(sys.argv[2]).scalars("loss").steps) == 10
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in sys.argv[3].split(","))
    assert not loaded, loaded
    print("kernel", c_kernel.AVAILABLE)
    """
)


def test_the_hook_trains_and_writes_a_run_with_the_base_install_only(base_venv: Path, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    torch_uri, numpy_uri = f"file://{tmp_path}/torch-run", f"file://{tmp_path}/numpy-run"
    out = _run(
        [str(base_venv / "bin" / "python"), str(script), torch_uri, numpy_uri, ",".join(EXTRAS_ONLY)],
        cwd=tmp_path,
        env=_venv_env(),
    )
    assert out.returncode == 0, out.stdout + out.stderr
    # The wheel's own C kernel read the CPU tensors (a wheel built without it would say False).
    assert out.stdout.strip().endswith("kernel True"), out.stdout
    inspect = _run(
        [str(base_venv / "bin" / "trainguard"), "inspect", torch_uri], cwd=tmp_path, env=_venv_env()
    )
    assert inspect.returncode == 0, inspect.stdout + inspect.stderr
    assert "30 saved (first 0, last 29)" in inspect.stdout


def test_a_command_that_needs_an_extra_names_the_extra_to_install(base_venv: Path, tmp_path: Path) -> None:
    out = _run(
        [str(base_venv / "bin" / "trainguard"), "run", "--", "python", "-c", "pass"],
        cwd=tmp_path,
        env=_venv_env(),
    )
    assert out.returncode == 2
    # Which of the extra's packages is imported first is the code's business; the line names one of them.
    (line,) = out.stderr.strip().splitlines()
    assert re.fullmatch(
        r"trainguard: error: `trainguard run` needs the optional package '(yaml|prometheus_client)', which this "
        r"install lacks; install it with: pip install 'trainguard\[local\]'",
        line,
    ), line
    assert "Traceback" not in out.stderr
