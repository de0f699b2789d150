"""The C kernel of the hook's CPU path (`trainguard.capture.torch.c_kernel`) against the numpy reference.

Every statistic column, update/distance over saved steps, the "moved" share per unit, the log2
histogram and per-unit activity/saturation, on the same awkward tensors as the torch path's
tests; what it refuses; and in the hook: a saved CPU step costs no torch op for statistics, and a
model whose tensors the kernel cannot read (float64) still gets every column from the torch path.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest
import torch

import trainguard
import trainguard.torch as tg
from tests.capture.test_torch_hook_cost import OpLog
from tests.capture.test_torch_statistics import assert_columns_match, sample_tensors
from tests.capture.torch_loop import mlp, tier1_rows, train
from trainguard.capture.torch import c_kernel
from trainguard.store import run_format, stats


def test_the_kernel_is_built_where_the_tests_run() -> None:
    # dev/setup.sh builds it (gcc is on every machine of this project); without it every test
    # below would pass vacuously through the torch path
    assert c_kernel.AVAILABLE, (
        "trainguard/capture/_cstats.c was not built: run dev/setup.sh (needs a C compiler)"
    )
    # the kernel's row and histogram widths are the run format's
    assert (c_kernel._cstats.N_COLUMNS, c_kernel._cstats.HIST_BINS) == (c_kernel.K, run_format.HIST_BINS)


def test_every_column_and_histogram_match_numpy() -> None:
    rows = c_kernel.HostRows(capacity=2)  # grows as tensors come
    tensors = [t for t in sample_tensors(torch.float32) if t.numel()]
    hists = [rows.add(i, t, hist=True)[0] for i, t in enumerate(tensors)]
    ids, got, nonfinite = rows.take()
    assert ids == list(range(len(tensors))) and got.dtype == np.float32
    assert_columns_match(got, np.stack([stats.tier0(t.numpy()) for t in tensors]))
    for t, h in zip(tensors, hists):
        np.testing.assert_array_equal(h, stats.log2_hist(t.numpy()))
    assert nonfinite and got[:, run_format.COLUMN["nan"]].any(), (
        "the samples hold NaN, and the kernel says so"
    )
    assert rows.take()[:3:2] == ([], False), "take starts the next step"


def test_one_call_for_several_tensors_writes_what_one_call_each_does() -> None:
    tensors = [t for t in sample_tensors(torch.float32) if t.numel()]
    copies = [(t.clone() + 1, t.clone() - 1) for t in tensors]
    one, many = c_kernel.HostRows(), c_kernel.HostRows(capacity=1)
    prevs_one = [p.clone() for p, _ in copies]
    for i, (t, (_, first)) in enumerate(zip(tensors, copies)):
        one.add(i, t, prev=prevs_one[i], first=first) if i % 2 else one.add(i, t)
    many.add_many(
        [
            (i, t, p, f, False) if i % 2 else (i, t, None, None, False)
            for i, (t, (p, f)) in enumerate(zip(tensors, copies))
        ]
    )
    (ids_one, rows_one, bad_one), (ids_many, rows_many, bad_many) = one.take(), many.take()
    assert ids_one == ids_many and bad_one == bad_many
    np.testing.assert_array_equal(rows_one, rows_many)
    assert all(torch.equal(p, t) for i, (t, (p, _)) in enumerate(zip(tensors, copies)) if i % 2)
    with pytest.raises(ValueError):  # one tensor it cannot read: none is read
        many.add_many([(0, tensors[0], None, None, False), (1, tensors[1].double(), None, None, False)])
    assert many.take()[0] == []


def test_the_kernel_says_which_steps_hold_nan_or_inf() -> None:
    # the writer flushes a step with NaN/Inf at once; the hook tells it from the kernel's answer
    rows = c_kernel.HostRows()
    finite, bad = torch.ones(8), torch.tensor([1.0, float("inf"), 2.0])
    rows.add_many([(0, finite, None, None, False), (1, finite, None, None, False)])
    assert rows.take()[2] is False
    rows.add_many([(0, finite, None, None, False), (1, bad, None, None, False)])
    rows.add(2, finite)
    assert rows.take()[2] is True
    rows.add(0, bad)
    rows.clear()
    assert rows.take()[2] is False, "a cleared step starts clean"


def test_update_distance_and_moved_follow_the_saved_steps() -> None:
    g = torch.Generator().manual_seed(1)
    w = torch.randn(6, 5, generator=g)
    prev, first = w.clone(), w.clone()
    saved = [w.clone()]
    rows = c_kernel.HostRows()
    _, moved0 = rows.add(0, w, prev=prev, first=first, fresh=True, units=6)
    assert np.isnan(moved0).all(), "no previous copy at the first save"
    for step in range(1, 4):
        w[step] += torch.randn(5, generator=g)  # one row moves entirely
        w[0, :2] += 1.0  # two of row 0's five elements move
        _, moved = rows.add(step, w, prev=prev, first=first, units=6)
        assert torch.equal(prev, w), "the previous copy moves on"
        want = np.zeros(6, np.float32)
        want[0], want[step] = 0.4, 1.0
        np.testing.assert_array_equal(moved, want)
        saved.append(w.clone())
    _, got, nonfinite = rows.take()
    assert not nonfinite
    want_rows = [stats.tier0(saved[0].numpy(), first=saved[0].numpy())]
    want_rows[0][run_format.COLUMN["update_l2"]] = np.nan  # fresh: nothing to compare with yet
    want_rows += [
        stats.tier0(saved[i].numpy(), prev=saved[i - 1].numpy(), first=saved[0].numpy()) for i in range(1, 4)
    ]
    assert_columns_match(got, np.stack(want_rows))


@pytest.mark.parametrize("scale", [1e-30, 1e-12, 1.0, 1e18, 1e30], ids=lambda s: f"{s:g}")
@pytest.mark.parametrize("offset", [0.0, 3.0, 30.0], ids=["centred", "mean-3std", "mean-30std"])
def test_sums_hold_at_every_magnitude_and_mean(scale: float, offset: float) -> None:
    # the kernel sums 512-value blocks in float32: squares that overflow (1e30: 1e60) or fall out of
    # float32's normal range (1e-30) must send their block to float64, a mean far above the spread
    # to the exact variance pass; 1300 values: two whole blocks and a partial one
    g = torch.Generator().manual_seed(3)
    x = ((torch.randn(1300, generator=g, dtype=torch.float64) + offset) * scale).float()
    prev = (x.double() * (1 + 1e-3 * torch.randn(1300, generator=g, dtype=torch.float64))).float()
    first = x * 0.5
    want = stats.tier0(x.numpy(), prev=prev.numpy(), first=first.numpy())
    rows = c_kernel.HostRows()
    rows.add(0, x, prev=prev, first=first)
    got = rows.take()[1]
    assert np.isfinite(got).all() and torch.equal(prev, x)
    assert_columns_match(got[0], want)


@pytest.mark.parametrize(
    "make",
    [
        lambda g: torch.randn(5000, generator=g),  # each 1024-value chunk spans ~15 binades
        lambda g: torch.relu(torch.randn(5000, generator=g)),  # half zeros (bin 0)
        lambda g: torch.rand(5000, generator=g) + 1,  # one binade
        lambda g: torch.randn(5000, generator=g) * torch.exp(torch.randn(5000, generator=g) * 20),  # dozens
    ],
    ids=["normal", "relu", "one-binade", "wide"],
)
def test_histograms_match_numpy_however_many_binades_a_chunk_spans(make: Any) -> None:
    # numpy's counts whatever the spread of exponents within each 1024-value chunk the kernel bins
    # at a time, with NaN/Inf left out and zeros in bin 0
    x = make(torch.Generator().manual_seed(4))
    x[[7, 1500, 4999]] = torch.tensor([float("nan"), float("inf"), 0.0])
    rows = c_kernel.HostRows()
    hist, _ = rows.add(0, x, hist=True)
    np.testing.assert_array_equal(hist, stats.log2_hist(x.numpy()))


@pytest.mark.parametrize("shape", [(64, 24), (4, 6, 3, 5), (40,)], ids=["2d", "4d", "1d"])
@pytest.mark.parametrize("activation", ["relu", "sigmoid", "tanh"])
def test_per_unit_activity_and_saturation_match_numpy(shape: tuple[int, ...], activation: str) -> None:
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(2)) * 3
    x = {"relu": x, "sigmoid": torch.sigmoid(x), "tanh": torch.tanh(x)}[activation]
    x.view(-1)[1] = float("nan")  # neither active nor saturated
    unit = c_kernel.unit_vector(x, activation)
    want = stats.unit_activity(x.numpy(), activation)
    assert unit is not None and want is not None and unit[0] == want[0]
    np.testing.assert_allclose(unit[1], want[1], rtol=0, atol=1e-7)
    assert c_kernel.unit_vector(x, "identity") is None


@pytest.mark.parametrize(
    ("tensor", "kwargs"),
    [
        (torch.zeros(4, dtype=torch.float64), {}),
        (torch.zeros(4, 4).t(), {}),  # not contiguous
        (torch.zeros(0), {}),
        (torch.zeros(4), {"prev": torch.zeros(3), "first": torch.zeros(4)}),  # copies of another size
        (torch.zeros(4), {"prev": torch.zeros(4, dtype=torch.float16), "first": torch.zeros(4)}),
        (torch.zeros(4), {"units": 3}),  # units without a tracked tensor
    ],
    ids=["float64", "strided", "empty", "short-copy", "half-copy", "untracked-units"],
)
def test_what_the_kernel_cannot_read_is_refused_before_it_reads_anything(
    tensor: torch.Tensor, kwargs: dict[str, object]
) -> None:
    rows = c_kernel.HostRows()
    with pytest.raises(ValueError):
        rows.add(0, tensor, **kwargs)  # type: ignore[arg-type]
    assert rows.take()[0] == []


def test_a_saved_cpu_step_dispatches_no_torch_op_for_statistics(file_uri: str) -> None:
    # every tensor is read in place by the kernel: no copy, no reduction, no transfer; beyond
    # training's own ops a saved step only detaches and reads the loss
    logs: dict[str, OpLog] = {}
    for name, hook in (("plain", None), ("hooked", tg.Hook(file_uri, save_interval=2, tier1_interval=1))):
        log = logs[name] = OpLog()

        def watch(step: int, log: OpLog = log) -> None:
            if step == 1:
                log.__enter__()  # iterations 2 and 3: saved step 2 (tier 1) with its loss, and step 3
            elif step == 3:
                log.__exit__(None, None, None)

        train(hook, mlp(), steps=5, on_step=watch)
        if hook is not None:
            assert hook.errors == [] and hook._worker is None
            hook.close()
    extra = logs["hooked"].ops - logs["plain"].ops
    assert set(extra) <= {"aten.detach.default", "aten._local_scalar_dense.default"}, extra
    assert not logs["plain"].ops - logs["hooked"].ops


def test_tensors_the_kernel_cannot_read_take_the_torch_path(file_uri: str) -> None:
    model = mlp()
    with torch.no_grad():  # a transposed weight (and so gradient): not contiguous, packed by torch ops
        model[4].weight = torch.nn.Parameter(model[4].weight.t().contiguous().t())
    assert not c_kernel.usable(model[4].weight)
    with tg.Hook(file_uri, save_interval=1, tier1_interval=1) as hook:
        seen = train(hook, model, steps=3)
    assert hook.errors == [] and len(seen.losses) == 3
    run = trainguard.open_run(file_uri)
    assert run.steps().tolist() == [0, 1, 2]
    for name, param in (("4.weight", model[4].weight), ("0.weight", model[0].weight)):
        got = np.array([run.series(name, col).values[-1] for col in run_format.STAT_COLUMNS])
        want = stats.tier0(param.detach().numpy())
        cols = slice(
            0, run_format.COLUMN["l2"] + 1
        )  # update/distance need the earlier copies: checked elsewhere
        assert_columns_match(got[cols], want[cols], name)


def test_a_missing_build_is_said_once_and_training_gets_the_torch_path(
    file_uri: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(c_kernel, "AVAILABLE", False)  # as after an install without a C compiler
    with caplog.at_level(logging.WARNING, logger="trainguard"), tg.Hook(file_uri, save_interval=1) as hook:
        train(hook, mlp(), steps=4)
    assert hook.errors == [] and not hook._native and hook._worker is not None
    said = [r.getMessage() for r in caplog.records if "C kernel was not built" in r.getMessage()]
    assert len(said) == 1 and "TRAINGUARD_NATIVE_STATS=false" in said[0]
    assert trainguard.open_run(file_uri).steps().tolist() == [0, 1, 2, 3]


def test_a_model_the_kernel_cannot_read_keeps_the_statistics_worker(file_uri: str) -> None:
    model = mlp().double()  # float64: every tensor takes the torch path, so the worker reduces them
    model.register_forward_pre_hook(lambda m, args: (args[0].double(),))
    with tg.Hook(file_uri, save_interval=2) as hook:
        seen = train(hook, model, steps=5)
        assert hook._worker is not None
    assert hook.errors == [] and len(seen.losses) == 5
    run = trainguard.open_run(file_uri)
    assert run.steps().tolist() == [0, 2, 4]
    got = np.array([run.series("4.weight", col).values[-1] for col in run_format.STAT_COLUMNS])
    want = stats.tier0(model[4].weight.detach().numpy())
    assert_columns_match(got[: run_format.COLUMN["l2"] + 1], want[: run_format.COLUMN["l2"] + 1])


def test_the_kernel_writes_the_run_the_torch_path_writes(file_uri: str) -> None:
    # every tensor, activations included, on the steps the kernel reads in one call per kind
    # (1, 3, 5) and on its Tier-1 steps (0, 2, 4), as on the torch path
    runs = {}
    for native_stats in (True, False):
        uri = f"{file_uri}-{native_stats}"
        with tg.Hook(uri, save_interval=1, tier1_interval=2, native_stats=native_stats) as hook:
            train(hook, mlp(), steps=6, eval_every=3)
        assert hook.errors == [] and hook._native == native_stats
        if native_stats:
            assert hook._native_plan is not None and hook._native_plan.spec is not None
        runs[native_stats] = trainguard.open_run(uri)
    kernel, torch_path = runs[True], runs[False]
    assert kernel.steps().tolist() == torch_path.steps().tolist() == list(range(6))
    assert [t.name for t in kernel.tensors()] == [t.name for t in torch_path.tensors()]
    for t in kernel.tensors():
        if t.is_scalar:
            mode = t.mode or "train"
            np.testing.assert_array_equal(
                kernel.scalars(t.name, mode=mode).values, torch_path.scalars(t.name, mode=mode).values
            )
            continue
        for col in run_format.STAT_COLUMNS:
            np.testing.assert_allclose(
                kernel.series(t.name, col).values,
                torch_path.series(t.name, col).values,
                rtol=2e-5,
                atol=1e-7,
                equal_nan=True,
                err_msg=f"{t.name} {col}",
            )
    for key in ("units", "hists"):
        got = [tier1_rows(r, key) for r in (kernel, torch_path)]
        assert got[0].keys() == got[1].keys() and got[0]
        for k in got[0]:
            np.testing.assert_allclose(got[0][k], got[1][k], rtol=0, atol=1e-6, err_msg=f"{key} {k}")


class OutOfPlaceSGD(torch.optim.Optimizer):
    """Gives every parameter new storage on every other step (`p.data = ...`, as some hand-written
    optimizers do; in place on the others); from step `double_at` on in float64, which the kernel
    does not read."""

    def __init__(self, params: Any, lr: float, double_at: int = -1) -> None:
        super().__init__(params, {"lr": lr})
        self.steps = 0
        self.double_at = double_at

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:  # type: ignore[override]
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if self.steps % 2:
                    p.sub_(group["lr"] * p.grad)
                else:
                    p.data = p.data - group["lr"] * p.grad
                    if self.steps == self.double_at:
                        p.data = p.data.double()
        self.steps += 1


def test_parameters_given_new_storage_by_the_optimizer_step_are_read_where_they_now_are(
    file_uri: str,
) -> None:
    # the kernel's plan holds addresses: a step that moves the weights must not leave it reading the
    # old storage (freed, maybe unmapped) but the new one
    model = mlp()
    opt = OutOfPlaceSGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(1)
    seen: dict[int, np.ndarray] = {}
    with tg.Hook(file_uri, save_interval=1, tier1_interval=4) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for step in range(6):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(
                model(torch.randn(8, 8, generator=g)), torch.randint(0, 3, (8,), generator=g)
            )
            loss.backward()
            opt.step()
            seen[step] = model[0].weight.detach().numpy().copy()
        assert hook._native_plan is not None and hook._native_plan.spec is not None
    assert hook.errors == []
    run = trainguard.open_run(file_uri)
    want = np.stack([stats.tier0(seen[s], prev=seen[s - 1] if s else None, first=seen[0]) for s in range(6)])
    want[0, run_format.COLUMN["update_l2"]] = np.nan
    got = np.stack([run.series("0.weight", col).values for col in run_format.STAT_COLUMNS], 1)
    assert_columns_match(got, want)


def test_parameters_the_kernel_can_no_longer_read_wait_for_the_general_path(file_uri: str) -> None:
    # step 2's update leaves float64 weights: the plan is dropped after the kernel read step 2's
    # gradients; its weights wait, and from step 3 on the general path reads everything
    model = mlp()
    model.register_forward_pre_hook(lambda m, a: (a[0].to(m[0].weight.dtype),))
    opt = OutOfPlaceSGD(model.parameters(), lr=0.05, double_at=2)
    g = torch.Generator().manual_seed(1)
    with tg.Hook(file_uri, save_interval=1, tier1_interval=10, collections=["weights", "gradients"]) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(5):
            opt.zero_grad()
            out = model(torch.randn(8, 8, generator=g))
            torch.nn.functional.cross_entropy(out, torch.randint(0, 3, (8,), generator=g)).backward()
            opt.step()
        assert hook._native_plan is None, "dropped: the general path serves the float64 model"
        final = model[0].weight.detach().numpy().copy()
    assert hook.errors == []
    run = trainguard.open_run(file_uri)
    assert run.series("0.weight", "l2").steps.tolist() == [0, 1, 3, 4], "step 2's weights wait"
    assert run.series("grad/0.weight", "l2").steps.tolist() == [0, 1, 2, 3, 4]
    got = np.array([run.series("0.weight", col).values[-1] for col in run_format.STAT_COLUMNS])
    want = stats.tier0(final)
    assert_columns_match(got[: run_format.COLUMN["l2"] + 1], want[: run_format.COLUMN["l2"] + 1])


def test_one_call_reads_any_number_of_tensors_and_refuses_a_malformed_spec() -> None:
    # more tensors than the kernel keeps on its stack (64): their spec goes to the heap
    g = torch.Generator().manual_seed(3)
    tensors = [torch.randn(int(torch.randint(1, 40, (1,), generator=g)), generator=g) for _ in range(150)]
    one, many = c_kernel.HostRows(), c_kernel.HostRows()
    for i, t in enumerate(tensors):
        one.add(i, t)
    many.add_many([(i, t, None, None, False) for i, t in enumerate(tensors)])
    (ids_one, rows_one, _), (ids_many, rows_many, _) = one.take(), many.take()
    assert ids_one == ids_many == list(range(150))
    np.testing.assert_array_equal(rows_one, rows_many)
    rows = np.empty((4, c_kernel.K), np.float32)
    for spec in ([1, 2, 3], [tensors[0].data_ptr(), 0, 0, 0, 0], [tensors[0].data_ptr(), 1, 5, 0, 0]):
        with pytest.raises(ValueError):  # not 5 ints per tensor; n < 1; one saved copy without the other
            c_kernel._cstats.reduce_many(spec, rows, 0)
    with pytest.raises(ValueError):  # no room for the rows
        c_kernel._cstats.reduce_many([tensors[0].data_ptr(), 1, 0, 0, 0] * 5, rows, 0)
