"""`collapsed_lookup`: an embedding table read through one row at saved step after saved step.

Views as the evaluator builds them for a table `emb.weight` (nn.Embedding, 1000 rows of width 8) beside a linear
head: the table's gradient is non-zero in the rows the batch looked up. Healthy batches read a few hundred rows;
ids collapsed to one value read one.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from tests.rules.streams import Stream
from trainguard.rules.collapsed_lookup import CollapsedLookup
from trainguard.rules.step_view import COL, COLUMNS, StepView, TensorMeta


def lookup_views(
    rows_read: Callable[[int], float], *, steps: int = 100, every: int = 10, rows: int = 1000, width: int = 8,
    module_type: str = "Embedding", nan_at: tuple[int, ...] = ()
) -> list[StepView]:  # fmt: skip
    """Saved views every `every` steps; at step s the table's gradient is non-zero in `rows_read(s)` rows."""
    meta = (
        TensorMeta("emb.weight", "weights", module="emb", module_type=module_type, trainable=True, order=0,
                   shape=(rows, width)),
        TensorMeta("grad/emb.weight", "gradients", module="emb", order=0, shape=(rows, width)),
        TensorMeta("fc.weight", "weights", module="fc", module_type="Linear", trainable=True, order=1, shape=(1, width)),
        TensorMeta("grad/fc.weight", "gradients", module="fc", order=1, shape=(1, width)),
    )  # fmt: skip
    names = tuple(m.name for m in meta)
    views = []
    for step in range(0, steps, every):
        stats = np.zeros((len(meta), len(COLUMNS)))
        for i, m in enumerate(meta):
            stats[i, COL["count"]] = math.prod(m.shape)
            stats[i, COL["l2"]] = 1.0
        stats[1, COL["zero"]] = (rows - rows_read(step)) * width
        if step in nan_at:
            stats[1, COL["nan"]], stats[1, COL["zero"]] = rows * width, 0
        views.append(StepView(step=step, names=names, meta=meta, stats=stats, scalars={"loss": 1.0}))
    return views


def collapsed(_: int) -> float:
    return 1


def healthy(_: int) -> float:
    return 230


def findings(stream: list[StepView], **params: object) -> list[tuple[int, str | None]]:
    rule = CollapsedLookup(params)
    return [(f.step, f.tensor) for v in stream for f in rule.update(v)]


def test_a_table_read_through_one_row_at_five_saved_steps_in_a_row_is_reported_once() -> None:
    rule = CollapsedLookup()
    found = [f for v in lookup_views(collapsed) for f in rule.update(v)]
    assert [(f.step, f.tensor) for f in found] == [(40, "emb.weight")]
    assert "1000 rows of width 8" in found[0].message and "8 of 8000 gradient elements" in found[0].message
    assert found[0].value == 5 and "each of the last 5 saved steps" in found[0].message


def test_a_table_whose_batches_read_many_rows_is_quiet() -> None:
    assert findings(lookup_views(healthy)) == []


def test_one_row_at_saved_steps_that_are_not_in_a_row_is_quiet() -> None:
    # a small table whose batches sometimes share one id: one row at every other saved step never makes five
    assert findings(lookup_views(lambda s: 1 if s % 20 == 0 else 3, steps=400)) == []
    assert findings(lookup_views(lambda s: 1 if s % 20 == 0 else 3, steps=400), views=2) == []


def test_fewer_views_are_asked_for_by_the_parameter() -> None:
    assert findings(lookup_views(collapsed), views=3) == [(20, "emb.weight")]


def test_steps_without_a_gradient_or_with_a_non_finite_one_are_no_evidence_either_way() -> None:
    # no gradient at all reached the table at steps 10 and 30, a NaN one at 50: neither counts nor resets
    views = lookup_views(lambda s: 0 if s in (10, 30) else 1, nan_at=(50,), steps=120)
    assert findings(views) == [(70, "emb.weight")]


def test_tables_of_one_row_and_dense_kernels_are_not_judged() -> None:
    assert findings(lookup_views(collapsed, rows=1)) == []
    assert findings(lookup_views(collapsed, module_type="Linear")) == []


def test_a_run_without_embedding_tables_is_not_checked() -> None:
    rule = CollapsedLookup()
    for v in Stream(steps=30):
        assert rule.update(v) == []
    assert not rule.checked
    rule = CollapsedLookup()
    for v in lookup_views(healthy):
        rule.update(v)
    assert rule.checked


def test_its_state_round_trips_mid_streak() -> None:
    views = lookup_views(collapsed)
    rule = CollapsedLookup()
    for v in views[:3]:
        assert rule.update(v) == []
    restored = CollapsedLookup()
    restored.load_state_dict(rule.state_dict())
    assert [f.step for v in views[3:] for f in restored.update(v)] == [40]
