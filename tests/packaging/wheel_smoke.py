"""Checks an installed TrainGuard wheel in seconds: the command, the C kernel, the hook writing a run it reads back.

Run by cibuildwheel after each wheel is built (`[tool.cibuildwheel] test-command` in pyproject.toml) and by
hand on any install: `python tests/packaging/wheel_smoke.py`. Exits non-zero with the reason on the first
failure. The numpy `Recorder` is the hook here; the PyTorch hook is checked too when torch is installed
(cibuildwheel's test venvs have no torch: a CPU torch wheel is hundreds of megabytes per Python version).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import trainguard
from trainguard.store import run_format
from trainguard.store.runs import open_run


def check_kernel() -> None:
    """The C extension was built into the wheel and computes a tensor's statistics."""
    from trainguard.capture import _cstats

    x = np.array([3.0, -4.0, 0.0], np.float32)
    out = np.zeros((1, _cstats.N_COLUMNS), np.float32)
    nonfinite = _cstats.reduce(x.ctypes.data, x.size, out, 0, 0, 0, False, None, 0, None)
    row = dict(zip(run_format.STAT_COLUMNS, out[0].tolist(), strict=True))
    assert not nonfinite and (row["count"], row["zero"], row["min"], row["max"], row["l2"]) == (
        3,
        1,
        -4,
        3,
        5,
    ), row


def check_recorder(root: Path) -> None:
    """The numpy hook writes a run that the reader opens with every saved step."""
    uri = (root / "numpy").as_uri()
    with trainguard.Recorder(uri, save_interval=2) as rec:
        for step in range(10):
            rec.record_tensor("fc.weight", np.full((4, 4), step, np.float32), collection="weights")
            rec.record_scalar("loss", 1.0 / (1 + step))
            rec.step()
    run = open_run(uri)
    assert run.steps(rank=0).tolist() == [0, 2, 4, 6, 8], run.steps(rank=0)
    end = run.ended(rank=0)
    assert end is not None and end.status == "ok", end


def check_torch_hook(root: Path) -> None:
    import torch

    import trainguard.torch as tg

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    uri = (root / "torch").as_uri()
    with tg.Hook(uri, save_interval=1) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(3):
            loss = model(torch.randn(4, 8)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            hook.record_scalar("loss", loss)
    assert open_run(uri).steps(rank=0).size == 3


def main() -> int:
    version = subprocess.run(
        [sys.executable, "-m", "trainguard", "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert version == f"trainguard {trainguard.__version__}", version
    check_kernel()
    with tempfile.TemporaryDirectory() as tmp:
        check_recorder(Path(tmp))
        if importlib.util.find_spec("torch") is not None:
            check_torch_hook(Path(tmp))
    print(f"{version} from {Path(trainguard.__file__).parent}: command, C kernel and hook work")
    return 0


if __name__ == "__main__":
    sys.exit(main())
