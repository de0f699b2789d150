"""The hook's cost promises: one device-to-host copy per saved step, and no work at all on other steps.

Copies are counted by wrapping `torch_stats.to_host`, the single transfer function; "no work"
is checked with a TorchDispatchMode that records every aten op of an iteration, compared with
the same iteration of an identical model without a hook.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import trainguard.torch as tg
from tests.capture.torch_loop import mlp, train
from trainguard.capture.torch import device_stats as torch_stats


class OpLog(TorchDispatchMode):
    """Records the name of every aten op dispatched while active."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.ops[str(func)] += 1
        return func(*args, **(kwargs or {}))


@pytest.fixture
def transfers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Sizes of every payload that went through `torch_stats.to_host`."""
    seen: list[int] = []
    real = torch_stats.to_host

    def counting(payload: torch.Tensor):  # type: ignore[no-untyped-def]
        seen.append(payload.numel())
        return real(payload)

    monkeypatch.setattr(torch_stats, "to_host", counting)
    return seen


def test_each_saved_step_costs_exactly_one_host_copy_including_its_scalars(
    file_uri: str, transfers: list[int]
) -> None:
    copies_after: dict[int, int] = {}
    # the accelerator path (here on CPU: the torch path without the statistics worker): the copy
    # happens on the training thread; the worker's copies are counted in test_torch_hook_worker.py
    with tg.Hook(file_uri, save_interval=4, tier1_interval=2, stats_worker=False, native_stats=False) as hook:
        train(
            hook, mlp(), steps=13, eval_every=6, on_step=lambda s: copies_after.__setitem__(s, len(transfers))
        )
        before_close = len(transfers)
    # step s is finalised at the start of iteration s+1, so the copy of step 4 shows after step 5
    assert [copies_after[s] for s in range(13)] == [0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]
    assert len(transfers) == before_close + 1  # step 12 at close
    raw_width = len(torch_stats.RAW_COLUMNS)
    tensors = 6 + 6 + 2 + 1  # weights/biases, gradients, activations, the input batch
    # step 0 is tier 1: per-unit vectors (activations 16 + 16; "moved" of the parameters 16 + 16 + 16 + 16
    # + 3 + 3) and 15 histograms ride in the same copy, with loss, lr and the validation loss of step 0, and
    # so do the rows of the 6 parameters' initial-weights records (read before step 0's update)
    units = 32 + 70
    assert transfers[0] == (tensors + 6) * raw_width + units + tensors * 64 + 2
    # step 4: the losses of steps 1 to 4, held on the device since (lr is a float) -- no tier 1
    assert transfers[1] == tensors * raw_width + 4
    # step 8: the losses of steps 5 to 8 + val_loss of step 6
    assert transfers[2] == tensors * raw_width + units + tensors * 64 + 4 + 1


def test_steps_that_are_not_saved_run_exactly_the_ops_of_training_without_a_hook(file_uri: str) -> None:
    """Not one op more: a 0-d CPU loss is read at once, on the host (no transfer), by `tolist()`, which
    dispatches no op (`item()` would show as `aten._local_scalar_dense`); a device tensor is only held
    (`test_torch_hook_gpu_proxies`)."""
    logs: dict[str, OpLog] = {}
    for name, hook in (("plain", None), ("hooked", tg.Hook(file_uri, save_interval=5))):
        log = logs[name] = OpLog()

        def watch(step: int, log: OpLog = log) -> None:
            if step == 1:
                log.__enter__()  # iteration 2: the step is not saved (nor is the iteration before it)
            elif step == 3:
                log.__exit__(None, None, None)

        train(hook, mlp(), steps=5, on_step=watch)
        if hook is not None:
            assert hook.errors == []
            hook.close()
    assert logs["hooked"].ops == logs["plain"].ops  # the losses of iterations 2 and 3 read, no op for it
    assert sum(logs["plain"].ops.values()) > 50  # the log did see a training iteration


def test_activation_hooks_are_installed_only_for_saved_iterations(file_uri: str) -> None:
    model = mlp()
    installed: dict[int, bool] = {}
    with tg.Hook(file_uri, save_interval=3) as hook:
        train(
            hook,
            model,
            steps=7,
            on_step=lambda s: installed.__setitem__(s + 1, bool(model[1]._forward_hooks)),
        )
    assert installed == {1: False, 2: False, 3: True, 4: False, 5: False, 6: True, 7: False}


def test_the_forward_is_watched_only_around_saved_steps_and_scalars_still_land_on_their_step(
    file_uri: str,
) -> None:
    """A forward pre-hook sends every call of the module down torch's slow path, so the hook's own is there
    only for iterations that are saved or follow a saved one; a loss recorded before `optimizer.step()`
    (during the iteration) must still land on its own step, never on the one before, watched or not."""
    import trainguard

    model = mlp()
    watched: dict[int, bool] = {}
    # a forward (post-)hook runs after every pre-hook: the hook's, when installed, has marked the iteration
    model.register_forward_hook(lambda m, i, o: watched.__setitem__(hook.step, hook._in_iteration))
    with tg.Hook(file_uri, save_interval=4) as hook:
        seen = train(hook, model, steps=11, loss_after_step=False)
    assert [s for s, w in sorted(watched.items()) if w] == [0, 1, 4, 5, 8, 9]
    steps, values = trainguard.open_run(file_uri).scalars("loss")
    assert steps.tolist() == list(range(11))
    assert values.tolist() == pytest.approx([seen.losses[s] for s in range(11)], rel=1e-6)
