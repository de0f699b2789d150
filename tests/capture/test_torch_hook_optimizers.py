"""Several optimizers on one hook: re-created per epoch, two stepping alternately, one registered twice, one
replaced mid-epoch; and the blind spell of an optimizer that is not registered. Each test trains a real model,
reads the run back and checks the last step and every parameter's update_l2 against the tensors themselves."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from trainguard.capture.torch import _blindness, _optimizers

Snapshot = dict[str, torch.Tensor]

PATHS = {
    "c-kernel": {"stats_worker": False},  # the packed path where the kernel is not built
    "packed": {"native_stats": False, "stats_worker": False},  # the accelerators' path, on CPU
}
"""The hook's paths that write every saved step (the statistics worker may skip one when it is busy)."""


@pytest.fixture(params=list(PATHS))
def path(request: pytest.FixtureRequest) -> dict[str, bool]:
    return PATHS[request.param]


def _model(seed: int, n_in: int = 6, n_out: int = 4) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(n_in, 8), nn.Tanh(), nn.Linear(8, n_out))


def _batches(seed: int = 1) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    while True:
        yield torch.randn(16, 6, generator=g), torch.randn(16, 4, generator=g)


def _snap(**models: nn.Module) -> Snapshot:
    """Every parameter as float64, named as the hook names it (the model's prefix is the registration's)."""
    return {
        f"{prefix}{n}": p.detach().double().clone()
        for prefix, m in models.items()
        for n, p in m.named_parameters()
    }


def _check_updates(
    run: trainguard.Run, snaps: list[Snapshot], every: int, names: Callable[[str], str]
) -> None:
    """update_l2 at each saved step s is ||W(after s) - W(after s - every)||; NaN at the first saved step."""
    for key in snaps[0]:
        series = run.series(names(key), "update_l2")
        steps = series.steps.tolist()
        assert steps == list(range(0, len(snaps), every)), key
        assert np.isnan(series.values[0])
        want = [float(torch.linalg.vector_norm(snaps[s][key] - snaps[s - every][key])) for s in steps[1:]]
        np.testing.assert_allclose(series.values[1:], want, rtol=1e-4, err_msg=key)


def _train_step(
    opt: torch.optim.Optimizer, judge: nn.Module, made: torch.Tensor, target: torch.Tensor
) -> None:
    """One optimizer step on the loss of `judge` over `made` (also a GAN's discriminator or generator step)."""
    opt.zero_grad()
    nn.functional.mse_loss(judge(made), target).backward()
    opt.step()


def _registered(hook: tg.Hook, model: nn.Module) -> torch.optim.Optimizer:
    """Register `model` and a new SGD optimizer over it; return the optimizer."""
    hook.register_module(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    hook.register_optimizer(opt)
    return opt


def _plain(key: str) -> str:
    return key


def test_an_optimizer_recreated_every_epoch_keeps_the_steps_and_updates_going(
    file_uri: str, path: dict[str, bool]
) -> None:
    model, data, snaps = _model(0), _batches(), []
    with tg.Hook(file_uri, **path, save_interval=1) as hook:
        hook.register_module(model)
        for _epoch in range(4):
            opt = torch.optim.Adam(model.parameters(), lr=0.01)
            hook.register_optimizer(opt)
            for _ in range(5):
                x, y = next(data)
                _train_step(opt, model, x, y)
                snaps.append(_snap(**{"": model}))
        assert hook.step == 20
    run = trainguard.open_run(file_uri)
    end = run.ended()
    assert end is not None and end.last_step == 19 and end.unchecked_steps == 0 and end.status == "ok", end
    _check_updates(run, snaps, 1, _plain)


def test_two_optimizers_stepping_alternately_count_one_step_per_iteration(
    file_uri: str, path: dict[str, bool]
) -> None:
    # a GAN's shape: the discriminator steps, then the generator; each optimizer owns one model
    gen, disc, data, snaps = _model(0, 6, 6), _model(1, 6, 4), _batches(), []
    with tg.Hook(file_uri, **path, save_interval=2) as hook:
        hook.register_module(nn.ModuleDict({"g": gen, "d": disc}))  # one module: unique parameter names
        opt_g = torch.optim.Adam(gen.parameters(), lr=0.01)
        opt_d = torch.optim.SGD(disc.parameters(), lr=0.05)
        hook.register_optimizer(opt_g)
        hook.register_optimizer(opt_d)
        for _ in range(9):
            x, y = next(data)
            _train_step(opt_d, disc, gen(x).detach(), y)
            _train_step(opt_g, disc, gen(x), -y)
            snaps.append(_snap(**{"g.": gen, "d.": disc}))
        assert hook.step == 9
    run = trainguard.open_run(file_uri)
    end = run.ended()
    assert end is not None and end.last_step == 8 and end.unchecked_steps == 0, end
    assert len(snaps[0]) == 8
    _check_updates(run, snaps, 2, _plain)


def test_an_optimizer_registered_twice_counts_each_step_once(file_uri: str, path: dict[str, bool]) -> None:
    model, data = _model(0), _batches()
    with tg.Hook(file_uri, **path, save_interval=1) as hook:
        opt = _registered(hook, model)
        hook.register_optimizer(opt)
        snaps = []
        for _ in range(6):
            x, y = next(data)
            _train_step(opt, model, x, y)
            snaps.append(_snap(**{"": model}))
        assert hook.step == 6 and hook.errors == []
    run = trainguard.open_run(file_uri)
    end = run.ended()
    assert end is not None and end.last_step == 5 and end.status == "ok"
    _check_updates(run, snaps, 1, _plain)


def test_an_optimizer_replaced_mid_epoch_stops_counting(file_uri: str, path: dict[str, bool]) -> None:
    model, data, snaps = _model(0), _batches(), []
    with tg.Hook(file_uri, **path, save_interval=1) as hook:
        hook.register_module(model)
        old = torch.optim.SGD(model.parameters(), lr=0.05)
        hook.register_optimizer(old)
        opt = old
        for i in range(10):
            if i == 4:
                opt = torch.optim.Adam(model.parameters(), lr=0.01)
                hook.register_optimizer(opt)
            x, y = next(data)
            _train_step(opt, model, x, y)
            snaps.append(_snap(**{"": model}))
            if i == 6:
                old.step()  # the replaced one steps once more: not a step; its change lands in step 7's update
        assert hook.step == 10
    run = trainguard.open_run(file_uri)
    end = run.ended()
    assert end is not None and end.last_step == 9 and end.unchecked_steps == 0, end
    _check_updates(run, snaps, 1, _plain)


def test_an_optimizer_recreated_without_registering_makes_the_hook_blind_and_says_since_when(
    file_uri: str, path: dict[str, bool]
) -> None:
    model, data = _model(0), _batches()
    with tg.Hook(file_uri, **path, save_interval=1) as hook:
        hook.register_module(model)
        for epoch in range(4):
            opt = torch.optim.Adam(model.parameters(), lr=0.01)
            if epoch == 0:
                hook.register_optimizer(opt)  # only the first: the script before the fix
            for _ in range(5):
                x, y = next(data)
                _train_step(opt, model, x, y)
        assert hook.step == 5
    run = trainguard.open_run(file_uri)
    end = run.ended()
    assert end is not None and end.last_step == 4, end
    assert (end.unchecked_steps, end.blind_since_step) == (15, 5)
    markers = [seg.extra[_blindness.RECORD] for seg in run.segments() if _blindness.RECORD in seg.extra]
    assert markers and markers[0][0].tolist() == [5, 2]  # during the run: blind since step 5, 2 steps so far


def test_a_critic_stepping_five_times_per_generator_step_makes_one_step_with_it(
    file_uri: str, path: dict[str, bool]
) -> None:
    gen, critic, data = _model(0, 6, 6), _model(1, 6, 4), _batches()
    with tg.Hook(file_uri, **path, save_interval=1, collections=["weights"]) as hook:
        hook.register_module(nn.ModuleDict({"g": gen, "c": critic}))
        opt_g = torch.optim.Adam(gen.parameters(), lr=0.01)
        opt_c = torch.optim.SGD(critic.parameters(), lr=0.01)
        hook.register_optimizer(opt_c)
        hook.register_optimizer(opt_g)
        for _ in range(4):
            for _ in range(5):
                x, y = next(data)
                _train_step(opt_c, critic, gen(x).detach(), y)
            _train_step(opt_g, critic, gen(x), -y)
        assert hook.step == 4
    end = trainguard.open_run(file_uri).ended()
    assert end is not None and end.last_step == 3 and end.unchecked_steps == 0


def test_a_registered_optimizer_that_never_steps_does_not_stop_the_count(
    file_uri: str, path: dict[str, bool]
) -> None:
    model, head, data = _model(0), nn.Linear(4, 4), _batches()
    with tg.Hook(file_uri, **path, save_interval=1, collections=["weights"]) as hook:
        opt = _registered(hook, model)
        later = torch.optim.SGD(head.parameters(), lr=0.05)  # for a stage that never comes
        hook.register_optimizer(later)
        for _ in range(110):
            x, y = next(data)
            _train_step(opt, model, x, y)
        # the first iteration waits for the other optimizer up to its limit; after that it is set aside
        assert hook.step == 110 - _optimizers.MAX_STEPS_PER_ITERATION
        del later  # an optimizer the script lets go is forgotten: every step counts again
        opt.step()
        assert hook.step == 111 - _optimizers.MAX_STEPS_PER_ITERATION


def test_losses_that_keep_coming_without_optimizer_steps_make_the_hook_blind(
    file_uri: str, path: dict[str, bool]
) -> None:
    # e.g. a gradient scaler that skips every step from some point on: training goes on, nothing is checked
    model, data = _model(0), _batches()
    with tg.Hook(file_uri, **path, save_interval=1) as hook:
        opt = _registered(hook, model)
        for i in range(10):
            x, y = next(data)
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            if i < 4:
                opt.step()
            hook.record_scalar("loss", loss.detach())
        model.eval()
        for _ in range(20):  # an evaluation that records train-mode scalars is not training: not blind
            hook.record_scalar("loss", nn.functional.mse_loss(model(x), y).detach())
        assert hook.step == 4
    end = trainguard.open_run(file_uri).ended()
    assert end is not None and (end.blind_since_step, end.unchecked_steps) == (4, 6), end


def test_several_losses_per_step_are_not_blindness(file_uri: str, path: dict[str, bool]) -> None:
    # gradient accumulation: four micro-batches, each recording its loss, per optimizer step
    model, data = _model(0), _batches()
    with tg.Hook(file_uri, **path, save_interval=1) as hook:
        opt = _registered(hook, model)
        for _ in range(6):
            for _ in range(4):
                x, y = next(data)
                loss = nn.functional.mse_loss(model(x), y) / 4
                loss.backward()
                hook.record_scalar("loss", loss.detach())
            opt.step()
            opt.zero_grad()
    end = trainguard.open_run(file_uri).ended()
    assert (
        end is not None and end.last_step == 5 and end.unchecked_steps == 0 and end.blind_since_step is None
    )


def _iterations(hook: tg.Hook, opt: torch.optim.Optimizer, model: nn.Module, steps: list[bool]) -> None:
    """One training iteration per entry, its optimizer step taken or skipped (a loss scaler's overflow)."""
    data = _batches()
    for take in steps:
        x, y = next(data)
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        if take:
            opt.step()
        hook.record_scalar("loss", loss.detach())


def _no_step_records(uri: str) -> list[tuple[int, int, int]]:
    """(step written at, since, iterations) of every no_step record of rank 0."""
    run = trainguard.open_run(uri)
    src = run.source(0)
    out = []
    for seg in src.poll():
        records, steps = seg.extra.get("no_step"), seg.extra.get("no_step.steps")
        if records is not None and steps is not None:
            out += [(int(s), int(r[0]), int(r[1])) for s, r in zip(steps, records)]
    return out


def test_steps_skipped_before_the_first_one_do_not_shrink_a_later_spells_count(
    file_uri: str, path: dict[str, bool]
) -> None:
    # a scaler coming down from a large scale skips 5 steps, trains 20, then never steps again for 30 iterations
    model = _model(0)
    with tg.Hook(file_uri, **path, save_interval=10) as hook:
        opt = _registered(hook, model)
        _iterations(hook, opt, model, [False] * 5 + [True] * 20 + [False] * 30)
    end = trainguard.open_run(file_uri).ended()
    assert end is not None and (end.blind_since_step, end.unchecked_steps) == (20, 30), end
    records = _no_step_records(file_uri)
    assert records[0] == (19, 20, 2) and records[-1] == (19, 20, 30), records  # at the last counted step


def test_an_optimizer_that_never_steps_is_told_after_a_hundred_iterations(
    file_uri: str, path: dict[str, bool]
) -> None:
    model = _model(0)
    with tg.Hook(file_uri, **path, save_interval=10) as hook:
        opt = _registered(hook, model)
        _iterations(hook, opt, model, [False] * 100)
        assert (
            hook.step == 0 and _blindness_of(hook).since is None
        )  # a hundred micro-batches may make one step
        _iterations(hook, opt, model, [False] * 20)
    end = trainguard.open_run(file_uri).ended()
    assert end is not None and (end.blind_since_step, end.unchecked_steps) == (0, 119), end
    assert _no_step_records(file_uri)[-1] == (0, 0, 119)


def _blindness_of(hook: tg.Hook) -> _blindness.Blindness:
    return hook._blindness  # type: ignore[attr-defined]
