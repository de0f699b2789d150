"""The same data on every rank: a real 2-rank DDP run whose ranks draw the same batches is reported by the
evaluator's cross-rank check `same_data_on_ranks` (beside the rules, which judge one rank each), with the
steps and values; ranks on their own batches are not, nor when the script averages its loss over the ranks
before recording it (the first activation still differs). The check's decisions on hand-made views: five
agreeing common steps in a row, values that change, an activation that clears an agreeing loss."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from tests.sidecar import ddp_same_data
from trainguard.api.enums import RuleState
from trainguard.rules.step_view import COL, COLUMNS, StepView, TensorMeta
from trainguard.sidecar.evaluator import Evaluator
from trainguard.sidecar.same_data import CHECK, STEPS_NEEDED, SameData

pytestmark = pytest.mark.skipif(not torch.distributed.is_available(), reason="torch without distributed")


@pytest.fixture(scope="module")
def ddp_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ddp")
    mp.start_processes(  # type: ignore[no-untyped-call]
        ddp_same_data.train, args=(2, str(root / "rdv"), str(root)), nprocs=2, join=True, start_method="spawn"
    )
    return root


def _evaluate(uri: str) -> Evaluator:
    ev = Evaluator(uri, checkpoint=False)
    ev.poll_until_idle()
    assert ev.ended and ev.ranks == [0, 1]
    return ev


def test_ranks_that_draw_the_same_batches_are_reported_with_their_steps_and_values(ddp_runs: Path) -> None:
    ev = _evaluate(f"file://{ddp_runs}/same")
    found = [f for f in ev.findings if f.rule == CHECK]
    assert len(found) == 1, ev.findings
    f = found[0]
    assert (f.step, f.rank) == (40, 1), f  # the fifth common saved step: 0, 10, 20, 30, 40
    assert f.message.startswith(
        "rank 1 trains on the same data as rank 0: at the 5 saved steps 0, 10, 20, 30, 40"
    )
    assert "loss " in f.message and "DistributedSampler" in f.message, f.message
    assert ev.rule_status[CHECK].state == RuleState.ISSUES_FOUND


@pytest.mark.parametrize("way", ["own", "own_loss_averaged"])
def test_ranks_on_their_own_batches_are_not_reported(ddp_runs: Path, way: str) -> None:
    ev = _evaluate(f"file://{ddp_runs}/{way}")
    assert [f for f in ev.findings if f.rule == CHECK] == [] and CHECK not in ev.rule_status


ACT = TensorMeta(name="act/0", collection="activations", order=0)


def _view(rank: int, step: int, loss: float, act_mean: float) -> StepView:
    row = np.ones(len(COLUMNS))
    row[COL["mean"]] = act_mean
    return StepView(step=step, rank=rank, names=("act/0",), meta=(ACT,), stats=row[None, :],
                    scalars={"loss": loss})  # fmt: skip


def _feed(check: SameData, pairs: list[tuple[float, float, float, float]]) -> list[int]:
    """Feed rank 0's and rank 1's views (loss, activation mean of each) at steps 0, 10, ...; the steps found at."""
    found = []
    for i, (l0, a0, l1, a1) in enumerate(pairs):
        for v in (_view(0, 10 * i, l0, a0), _view(1, 10 * i, l1, a1)):
            f = check.add(v)
            if f is not None:
                found.append(f.step)
    return found


def test_five_agreeing_common_steps_in_a_row_make_the_finding_once() -> None:
    same = [(1.0 - i / 20, 0.5 + i / 100) * 2 for i in range(8)]
    assert _feed(SameData(), same) == [10 * (STEPS_NEEDED - 1)]
    # one step apart restarts the count
    broken = same[:3] + [(0.8, 0.5, 0.9, 0.6)] + same[3:]
    assert _feed(SameData(), broken) == [10 * (3 + STEPS_NEEDED)]


def test_values_that_do_not_change_or_an_activation_that_differs_are_no_evidence() -> None:
    stuck = [(2.302585, 0.0) * 2 for _ in range(8)]  # a loss stuck at log(10) agrees whatever the data
    assert _feed(SameData(), stuck) == []
    averaged = [(1.0 - i / 20, 0.5 + i / 100, 1.0 - i / 20, 0.45 + i / 90) for i in range(8)]
    assert _feed(SameData(), averaged) == []
