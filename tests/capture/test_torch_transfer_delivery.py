"""The transfer's delivery thread: a saved step whose copy to the host is done is written off the training thread.

`Transfer.poll` only asks the copies' markers and hands the done slots, in the order sent, to one
background thread; a slot comes back to the ring once its delivery is over, so a step that finds every
slot copying or being delivered is refused (the hook skips it) instead of waited for. `wait` waits for
the copies and the deliveries, `drop` forgets what was not delivered, and a failing delivery is kept
for the hook, which disables capture and names it in END.json. The copies run on the CPU with the CUDA
staging's code (`PinnedStaging.copy`) and markers the test completes, as in the GPU proxies.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest
import torch

import trainguard
import trainguard.torch as tg
from tests.capture.torch_loop import assert_same_steps, mlp, train
from trainguard.capture.torch import _transfer, device_stats
from trainguard.store import run_format
from trainguard.store.backends import open_store

CPU = torch.device("cpu")


class Marker:
    """A copy the test says is done (or not yet); `synchronize` is waiting for it, which completes it."""

    def __init__(self, done: bool) -> None:
        self.done = done
        self.waited = False

    def query(self) -> bool:
        return self.done

    def synchronize(self) -> None:
        self.waited = self.done = True


class Staging(_transfer.PinnedStaging):
    """The CUDA staging on CPU tensors: plain buffers, and the markers the test holds (`done` for new copies)."""

    pin_memory = False

    def __init__(self) -> None:
        self.markers: list[Marker] = []
        self.done = True

    def record(self, device: torch.device) -> _transfer.Marker:
        self.markers.append(Marker(self.done))
        return self.markers[-1]


@pytest.fixture
def staging() -> Staging:
    return Staging()


@pytest.fixture
def transfer(staging: Staging) -> Iterator[_transfer.Transfer]:
    t = _transfer.Transfer(slots=2, staging=lambda device: staging)
    yield t
    t.close()


class Deliveries:
    """Records what each delivery got and on which thread; a delivery may be held until the test releases it."""

    def __init__(self) -> None:
        self.got: list[tuple[float, str]] = []
        self.hold = threading.Event()
        self.hold.set()
        self.started = threading.Event()

    def __call__(self, host: dict[torch.device, np.ndarray]) -> None:
        self.started.set()
        assert self.hold.wait(10.0)
        self.got.append((float(host[CPU][0]), threading.current_thread().name))


def send(
    t: _transfer.Transfer, value: float, deliver: Callable[[dict[torch.device, np.ndarray]], None]
) -> bool:
    return t.send({CPU: torch.full((4,), value, dtype=torch.float64)}, deliver)


def test_done_copies_are_delivered_off_the_calling_thread_in_the_order_sent(staging: Staging) -> None:
    transfer = _transfer.Transfer(slots=5, staging=lambda device: staging)
    deliveries = Deliveries()
    for value in range(5):
        assert send(transfer, float(value), deliveries)
        transfer.poll()  # hands it over at once: its copy is done
    transfer.wait()
    assert deliveries.got == [(float(v), "trainguard-delivery") for v in range(5)]
    assert transfer.in_flight == 0 and transfer.error is None and transfer.delivery_cpu_seconds > 0.0
    transfer.close()


def test_poll_hands_over_nothing_while_the_oldest_copy_is_in_flight(
    transfer: _transfer.Transfer, staging: Staging
) -> None:
    deliveries = Deliveries()
    staging.done = False
    assert send(transfer, 1.0, deliveries)
    staging.done = True
    assert send(transfer, 2.0, deliveries)
    transfer.poll()
    assert (
        transfer.drain(10.0) and deliveries.got == [] and transfer.in_flight == 2
    )  # the second waits its turn
    staging.markers[0].done = True
    transfer.poll()
    assert transfer.drain(10.0) and [v for v, _ in deliveries.got] == [1.0, 2.0]


def test_a_slot_returns_to_the_ring_only_once_its_delivery_is_over(transfer: _transfer.Transfer) -> None:
    deliveries = Deliveries()
    deliveries.hold.clear()
    assert send(transfer, 1.0, deliveries) and send(transfer, 2.0, deliveries)
    transfer.poll()
    assert deliveries.started.wait(10.0)
    # both copies are done, one step is being delivered and one waits for the thread: neither slot is free,
    # and a third step is refused at once rather than waited for
    started = time.monotonic()
    assert not transfer.has_room() and not send(transfer, 3.0, deliveries)
    assert time.monotonic() - started < 5.0 and transfer.in_flight == 2  # a send that waited would wait 10 s
    deliveries.hold.set()
    assert transfer.drain(10.0) and transfer.has_room() and transfer.in_flight == 0
    assert send(transfer, 3.0, deliveries)
    transfer.wait()
    assert [v for v, _ in deliveries.got] == [1.0, 2.0, 3.0]


def test_wait_waits_for_the_copies_and_for_their_deliveries(
    transfer: _transfer.Transfer, staging: Staging
) -> None:
    got: list[float] = []

    def slow(host: dict[torch.device, np.ndarray]) -> None:
        time.sleep(0.05)
        got.append(float(host[CPU][0]))

    staging.done = False  # the device is behind: nothing is handed over before wait
    assert send(transfer, 1.0, slow) and send(transfer, 2.0, slow)
    transfer.poll()
    assert got == []
    transfer.wait()
    assert got == [1.0, 2.0] and all(m.waited for m in staging.markers) and transfer.in_flight == 0


def test_drop_forgets_the_queued_deliveries_and_lets_the_running_one_end(staging: Staging) -> None:
    transfer = _transfer.Transfer(slots=3, staging=lambda device: staging)
    deliveries = Deliveries()
    deliveries.hold.clear()
    staging.done = True
    assert send(transfer, 1.0, deliveries) and send(transfer, 2.0, deliveries)
    staging.done = False
    assert send(transfer, 3.0, deliveries)  # still copying
    transfer.poll()
    assert deliveries.started.wait(10.0)
    transfer.drop()  # step 1 is being delivered, step 2 waits for the thread, step 3 is copying
    deliveries.hold.set()
    deadline = time.monotonic() + 10.0
    while transfer.in_flight and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [v for v, _ in deliveries.got] == [1.0] and transfer.in_flight == 0
    staging.done = True
    assert all(send(transfer, 4.0 + i, deliveries) for i in range(3)), "every slot is back in the ring"
    transfer.wait()
    assert [v for v, _ in deliveries.got] == [1.0, 4.0, 5.0, 6.0]
    transfer.close()


def test_a_failing_delivery_is_kept_for_the_hook_and_nothing_after_it_is_delivered(
    transfer: _transfer.Transfer,
) -> None:
    deliveries = Deliveries()

    def fail(host: dict[torch.device, np.ndarray]) -> None:
        raise RuntimeError("injected delivery failure")

    assert send(transfer, 1.0, fail) and send(transfer, 2.0, deliveries)
    transfer.wait()
    assert transfer.error is not None
    what, err = transfer.error
    assert what == "writing a saved step" and str(err) == "injected delivery failure"
    assert deliveries.got == []
    transfer.drop()
    assert transfer.in_flight == 0 and transfer.has_room()


def _proxy_transfer(slots: int = _transfer.DEFAULT_SLOTS) -> _transfer.Transfer:
    """CPU results sent the CUDA way (a slot, a poll, the delivery thread) instead of written at once."""
    return _transfer.Transfer(slots=slots, staging=lambda device: Staging())


def test_a_run_written_by_the_delivery_thread_equals_one_written_at_once(file_uri: str) -> None:
    # a slot for every send of the run: a delivery thread that the machine's load holds back makes the hook skip a
    # step when the ring is full (as it should), which is not what this test compares
    for uri, transfer in ((file_uri + "-thread", _proxy_transfer(slots=64)), (file_uri + "-at-once", None)):
        with tg.Hook(
            uri, save_interval=3, tier1_interval=2, stats_worker=False, native_stats=False, transfer=transfer
        ) as hook:
            train(hook, mlp(), steps=14, eval_every=4)
        assert hook.errors == [] and hook.skipped_steps == 0
        if transfer is not None:
            assert transfer.delivery_cpu_seconds > 0.0, "the steps went through the delivery thread"
    a, b = trainguard.open_run(file_uri + "-thread"), trainguard.open_run(file_uri + "-at-once")
    assert_same_steps(a, b, [0, 3, 6, 9, 12])


def test_a_failing_delivery_disables_capture_and_end_json_names_it(
    file_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = device_stats.finish
    calls = 0

    def fail_on_third(*args: object, **kwargs: object) -> np.ndarray:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise RuntimeError("injected finishing failure")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(device_stats, "finish", fail_on_third)
    model = mlp()
    transfer = _proxy_transfer(slots=64)
    hook = tg.Hook(file_uri, save_interval=2, stats_worker=False, native_stats=False, transfer=transfer)
    # each step waits for the deliveries handed over so far: when the training thread takes the failure up does
    # not depend on how fast a loaded machine runs the delivery thread (nor does a full ring skip a step)
    seen = train(hook, model, steps=12, on_step=lambda _: transfer.drain(30.0))
    assert len(seen.losses) == 12, "training went on"
    assert not hook.enabled and calls == 3, "the hook took the failure up from the training thread"
    assert not model._forward_pre_hooks and not model[1]._forward_hooks, "its hooks are gone"
    expected = "writing a saved step failed: RuntimeError: injected finishing failure; capture disabled, training continues"
    assert hook.errors == [expected]
    hook.close()
    end = json.loads(open_store(file_uri).get(run_format.end_key(0)))
    assert end["status"] == "error" and end["errors"] == [expected]
    assert trainguard.open_run(file_uri).steps().tolist() == [0, 2]
