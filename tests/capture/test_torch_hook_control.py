"""Configuration, the stop flag and the hook's life cycle: inert without TRAINGUARD_OUT, from_env,
rank prefixes, should_stop following the evaluator's stop file, close() idempotent and removing hooks."""

from __future__ import annotations

import atexit
from pathlib import Path

import numpy as np
import pytest
import torch

import trainguard
import trainguard.torch as tg
from tests.capture.torch_loop import mlp, train
from trainguard.stop_flag import request_stop
from trainguard.store import run_format


def test_without_trainguard_out_the_hook_is_inert_and_installs_nothing(tmp_path: Path) -> None:
    hook = tg.Hook.from_env({})
    model = mlp()
    seen = train(hook, model, steps=3)
    assert len(seen.losses) == 3
    assert not hook.enabled and hook.errors == [] and not hook.should_stop()
    assert not model._forward_pre_hooks and not model[1]._forward_hooks
    hook.record_scalar("loss", 1.0)
    hook.flush()
    hook.close()
    hook.close()


def test_the_kill_switch_wins_over_trainguard_out(tmp_path: Path) -> None:
    hook = tg.Hook.from_env({"TRAINGUARD_OUT": f"file://{tmp_path}/run", "TRAINGUARD_DISABLE": "1"})
    assert not hook.enabled


def test_from_env_reads_trainguard_variables_and_the_rank(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = f"file://{tmp_path}/run"
    env = {
        "TRAINGUARD_OUT": uri,
        "TRAINGUARD_SAVE_INTERVAL": "4",
        "TRAINGUARD_COLLECTIONS": "weights,losses",
        "TRAINGUARD_TRACK_UPDATES": "false",
        "RANK": "1",
        "WORLD_SIZE": "2",
    }
    with tg.Hook.from_env(env) as hook:
        assert hook.config is not None and hook.config.save_interval == 4 and not hook.config.track_updates
        train(hook, mlp(), steps=9)
    run = trainguard.open_run(uri)
    assert run.ranks == [1] and run.info is None  # rank 0 writes run.json; this is rank 1
    # the weights' initial-weights record comes with them
    assert set(run.collections(rank=1)) == {"weights", run_format.INITIAL_COLLECTION, "losses"}
    assert run.steps(rank=1).tolist() == [0, 4, 8]
    assert np.isnan(run.series("0.weight", "distance_l2", rank=1).values).all()  # not tracked


def test_should_stop_follows_the_stop_file(tmp_path: Path) -> None:
    stop_file = tmp_path / "stop" / "flag.json"
    seen_stop: list[int] = []
    with tg.Hook(f"file://{tmp_path}/run", stop_file=str(stop_file)) as hook:
        hook.register_module(model := mlp())
        assert not hook.should_stop()
        request_stop(str(stop_file), rule="exploding_tensor", message="grad/0.weight is NaN at step 3")
        hook._stop._next_check = 0.0  # skip the 0.2 s polling pause instead of sleeping
        assert hook.should_stop() and hook.should_stop()
        assert hook.stop_reason() == "grad/0.weight is NaN at step 3"
        seen_stop.append(len(model._forward_pre_hooks))
    assert seen_stop == [1]


def test_close_is_idempotent_removes_every_hook_and_writes_end(tmp_path: Path) -> None:
    uri = f"file://{tmp_path}/run"
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = tg.Hook(uri, save_interval=1)
    hook.register_module(model)
    hook.register_optimizer(opt)
    assert model._forward_pre_hooks and model[1]._forward_hooks and opt._optimizer_step_pre_hooks
    hook.close()
    hook.close()
    assert not model._forward_pre_hooks and not model[1]._forward_hooks and not model[3]._forward_hooks
    assert not opt._optimizer_step_pre_hooks and not opt._optimizer_step_post_hooks
    ended = trainguard.open_run(uri).ended()
    assert ended is not None and ended.status == "ok"
    hook.record_scalar("loss", 1.0)  # after close: a no-op, not an error
    model(torch.randn(2, 8)).sum().backward()
    opt.step()
    assert hook.errors == [] and hook.step == 0
    atexit.unregister(hook.close)  # close() already did; unregistering twice is harmless


def test_a_second_optimizer_registered_mid_run_counts_one_step_per_iteration_with_the_first(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # e.g. a WGAN: the critic steps twice per iteration, the generator once; an iteration is one step
    generator, critic = mlp(0), mlp(1)
    critic_opt = torch.optim.SGD(critic.parameters(), lr=0.01)
    uri = f"file://{tmp_path}/run"

    def critic_steps(step: int) -> None:
        if step == 0:
            hook.register_optimizer(critic_opt)  # after `train` registered the generator's
        for _ in range(2):
            critic_opt.zero_grad()
            critic(torch.randn(4, 8)).sum().backward()
            critic_opt.step()

    with tg.Hook(uri, save_interval=1, collections=["weights", "losses"]) as hook:
        hook.register_module(critic)
        with caplog.at_level("WARNING", logger="trainguard"):
            train(hook, generator, steps=5, on_step=critic_steps)
        assert hook.step == 5 and hook.errors == []
    assert "trainguard" not in caplog.text  # nothing to warn about
    assert trainguard.open_run(uri).steps().tolist() == [0, 1, 2, 3, 4]
