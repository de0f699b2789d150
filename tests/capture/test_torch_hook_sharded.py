"""Sharded and wrapped models under the hook: FSDP2 and DDP on 2 CPU ranks (gloo), and torch.compile.

Each FSDP2 rank reads only its own shard, with no collective call; the reader merges the shards,
so `open_run(...).series(name, col)` is the full tensor's statistics: compared here with numpy on
`full_tensor()` of every parameter and gradient at every step, on the C kernel's path and on the
torch path. A NaN in one rank's shard shows in the merged series and fires the rules.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp
from torch import nn

import trainguard
import trainguard.torch as tg
from tests.capture import sharded_loop
from tests.capture.test_torch_statistics import assert_columns_match
from trainguard.capture.torch import c_kernel
from trainguard.sidecar.evaluator import evaluate_stored
from trainguard.store import run_format, stats

pytestmark = pytest.mark.skipif(not torch.distributed.is_available(), reason="torch without distributed")

UPDATE = run_format.COLUMN["update_l2"]
NAMES = ("0.weight", "0.bias", "2.weight", "2.bias")


def _spawn(fn: object, *args: object) -> None:
    mp.start_processes(fn, args=args, nprocs=2, join=True, start_method="spawn")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def distributed_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One 2-rank start-up trains three FSDP2 runs (with the C kernel, with torch ops, and with a NaN) and a
    DDP one."""
    root = tmp_path_factory.mktemp("fsdp2")
    runs = []
    for name, native_stats, nan_step in (
        ("kernel", True, -1),
        ("torch", False, -1),
        ("nan", c_kernel.AVAILABLE, sharded_loop.STEPS - 1),
    ):
        (root / name / "truth").mkdir(parents=True)
        runs.append((str(root / name / "run"), str(root / name / "truth"), native_stats, nan_step))
    _spawn(sharded_loop.train, 2, str(root / "rdv"), runs, str(root / "ddp"))
    return root


@pytest.mark.parametrize("native_stats", [True, False], ids=["kernel", "torch"])
def test_fsdp2_merged_statistics_are_the_full_tensors(distributed_runs: Path, native_stats: bool) -> None:
    if native_stats and not c_kernel.AVAILABLE:
        pytest.skip("the C kernel is not built")
    out = distributed_runs / ("kernel" if native_stats else "torch") / "run"
    truth = out.parent / "truth"
    run = trainguard.open_run(str(out))
    assert run.ranks == [0, 1]
    full = [np.load(truth / f"step-{s}.npz") for s in range(sharded_loop.STEPS)]
    for name in (*NAMES, *(f"grad/{n}" for n in NAMES)):
        shard = next(t.shard for t in run.tensors(rank=1) if t.name == name)
        assert shard is not None and shard.of == 2 and shard.index == 1, name
        got = np.stack([run.series(name, col).values for col in run_format.STAT_COLUMNS], 1)
        assert run.series(name, "count").steps.tolist() == list(range(sharded_loop.STEPS)), name
        for s in range(sharded_loop.STEPS):
            want = stats.tier0(full[s][name])
            assert_columns_match(got[s, :UPDATE], want[:UPDATE], f"{name} at step {s}")
        # each rank's own rows stay readable: its part only
        own = run.series(name, "count", rank=1, merge=False).values
        assert own.tolist() == [float(np.prod(shard.local_shape))] * sharded_loop.STEPS
    # update and distance of a weight: the root of the shards' summed squares
    w = [full[s]["0.weight"].astype(np.float64) for s in range(sharded_loop.STEPS)]
    np.testing.assert_allclose(
        run.series("0.weight", "distance_l2").values[1:],
        [np.linalg.norm(w[s] - w[0]) for s in (1, 2)],
        rtol=1e-4,
    )


def test_a_nan_in_one_ranks_shard_shows_in_the_merged_series_and_fires_the_rules(
    distributed_runs: Path,
) -> None:
    out = distributed_runs / "nan" / "run"
    run = trainguard.open_run(str(out))
    # the NaN is put in at the last step (from there on it spreads through every gradient)
    assert run.series("grad/0.weight", "nan").values.tolist() == [0.0, 0.0, 1.0]
    assert run.series("grad/0.weight", "nan", rank=0, merge=False).values.tolist() == [0.0, 0.0, 0.0]
    assert np.isnan(run.series("0.weight", "max").values[2])  # SGD carried it into the weight
    findings = evaluate_stored(str(out))
    assert any(f.step == 2 and f.rank == 1 and f.tensor and "0.weight" in f.tensor for f in findings), (
        findings
    )


def test_ddp_registers_trains_and_is_named_as_the_bare_model(distributed_runs: Path) -> None:
    out = distributed_runs / "ddp"
    run = trainguard.open_run(str(out))
    for rank in (0, 1):
        names = {t.name for t in run.tensors("weights", rank=rank)}
        assert names == {"0.weight", "2.weight"}, names
        assert run.series("grad/0.weight", "count", rank=rank).steps.tolist() == [0, 1, 2]
        assert run.ended(rank=rank).status == "ok"  # type: ignore[union-attr]
    # DDP keeps the replicas equal: both ranks wrote the same weights
    np.testing.assert_array_equal(
        run.series("0.weight", "l2", rank=0).values, run.series("0.weight", "l2", rank=1).values
    )


# dynamo, resuming its trace after the graph break at an activation hook, reads the `.grad` of the
# activation it is handed (a non-leaf tensor), which warns; the warning is dynamo's, not a failure
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning")
def test_a_compiled_module_registers_and_trains(tmp_path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    compiled = torch.compile(model, backend="eager")  # dynamo's wrapping and guards, without a C++ build
    hook = tg.Hook(str(tmp_path), save_interval=1)
    hook.register_module(compiled)
    opt = torch.optim.SGD(compiled.parameters(), lr=0.1)
    hook.register_optimizer(opt)
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        x, y = torch.randn(4, 8, generator=g), torch.randint(0, 3, (4,), generator=g)
        opt.zero_grad()
        nn.functional.cross_entropy(compiled(x), y).backward()
        opt.step()
    hook.close()
    assert hook.errors == []
    run = trainguard.open_run(str(tmp_path))
    assert {t.name for t in run.tensors("weights")} == {"0.weight", "2.weight"}
    got = run.series("0.weight", "l2")
    assert got.steps.tolist() == [0, 1, 2]
    assert got.values[-1] == pytest.approx(float(model[0].weight.detach().norm()), rel=1e-5)
    assert {t.name for t in run.tensors("activations")} == {
        "act/1"
    }  # its hook ran inside the compiled module
