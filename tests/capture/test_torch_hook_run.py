"""A real PyTorch training loop with the hook, written to file:// and to real S3, read back with `open_run`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from tests.capture.torch_loop import mlp, tier1_rows, train
from trainguard.store import run_format
from trainguard.store.backends import open_store

PARAMS = ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]


@pytest.mark.slow
def test_a_training_run_reads_back_with_names_collections_scalars_and_lr(run_uri: str) -> None:
    with tg.Hook(run_uri, save_interval=3, tier1_interval=2, flush_every_steps=2, run_id="r1") as hook:
        seen = train(hook, mlp(), steps=20, eval_every=5)
        assert hook.errors == []
    run = trainguard.open_run(run_uri)
    assert run.info is not None and run.info.framework == "pytorch" and run.info.run_id == "r1"
    assert run.collections() == {
        "weights": ["0.weight", "2.weight", "4.weight"],
        "biases": ["0.bias", "2.bias", "4.bias"],
        "activations": ["act/1", "act/3"],
        "inputs": ["input/input"],  # nn.Sequential's forward(input)
        "gradients": [f"grad/{p}" for p in PARAMS],
        "optimizer": ["lr"]
        + [run_format.group_scalar("0.0", h) for h in ("lr", "momentum", "weight_decay", "nesterov")],
        "losses": ["loss", "val_loss"],
        run_format.INITIAL_COLLECTION: [run_format.initial_name(p) for p in PARAMS],
    }
    saved = list(range(0, 20, 3))
    assert run.steps().tolist() == saved
    cat = {t.name: t for t in run.tensors()}
    assert cat["act/1"].activation == "relu" and cat["act/3"].activation == "tanh"
    # `order`: each module's place in the forward pass, shared by its weights, gradients and outputs
    assert (cat["act/1"].order, cat["act/3"].order, cat["act/1"].units) == (1, 3, 16)
    assert [cat[p].order for p in PARAMS] == [cat[f"grad/{p}"].order for p in PARAMS] == [0, 0, 2, 2, 4, 4]
    assert cat["0.weight"].trainable and cat["0.weight"].shape == [16, 8] and cat["0.weight"].module == "0"
    _, l2 = run.series("0.weight", "l2")
    np.testing.assert_allclose(l2, [seen.weight_l2[s] for s in saved], rtol=1e-5)
    assert np.isnan(run.series("0.weight", "update_l2").values[0])
    assert run.series("0.weight", "distance_l2").values[0] == 0
    assert (run.series("0.weight", "update_l2").values[1:] > 0).all()
    assert np.isnan(run.series("grad/0.weight", "update_l2").values).all()
    assert (run.series("act/1", "count").values == 32 * 16).all()
    loss_steps, losses = run.scalars("loss")
    assert loss_steps.tolist() == list(range(20))  # train scalars: every step, saved or not
    np.testing.assert_allclose(losses, [seen.losses[s] for s in range(20)], rtol=1e-6)
    assert run.scalars("val_loss", mode="eval").steps.tolist() == [0, 5, 10, 15]
    assert run.scalars("lr").values.tolist() == [0.05] * len(saved)
    tier1 = [s for s in saved if (s // 3) % 2 == 0]
    segs = run.segments()
    assert sorted({int(s) for seg in segs for s in seg.tier1_steps}) == tier1
    units = {k for seg in segs for k in seg.units}
    ids = {t.name: t.id for t in run.tensors()}
    assert units == {("active", ids["act/1"]), ("saturated", ids["act/3"])} | {
        ("moved", ids[p]) for p in PARAMS
    }
    end = run.ended()
    assert end is not None and end.status == "ok" and end.last_step == 19  # the last step's loss


@pytest.mark.parametrize("after", [True, False], ids=["after-step", "before-step"])
@pytest.mark.parametrize(
    "settings",
    [{}, {"native_stats": False}, {"native_stats": False, "stats_worker": True}],
    ids=["kernel", "packed", "worker"],
)
def test_the_loss_of_every_step_is_kept_once_at_its_own_step(
    file_uri: str, after: bool, settings: dict[str, object]
) -> None:
    # a loss recorded before optimizer.step() on an iteration whose forward the hook does not watch is placed
    # as on the last watched one: one value per step, none doubled at the step after a saved one
    with tg.Hook(file_uri, save_interval=4, **settings) as hook:  # type: ignore[arg-type]
        seen = train(hook, mlp(), steps=13, loss_after_step=after)
        assert hook.errors == []
    run = trainguard.open_run(file_uri)
    steps, losses = run.scalars("loss")
    assert steps.tolist() == list(range(13))
    np.testing.assert_allclose(losses, [seen.losses[s] for s in range(13)], rtol=1e-6)
    assert run.steps().tolist() == [0, 4, 8, 12]  # statistics: saved steps only


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
def test_every_column_of_every_parameter_and_gradient_matches_the_tensors_on_each_device(
    file_uri: str, device: str
) -> None:
    # CPU: the C kernel reads the tensors in place; CUDA: packed reductions on the device and one copy per step
    model = mlp()
    snaps: list[dict[str, torch.Tensor]] = []

    def snapshot(step: int) -> None:
        snaps.append({n: p.detach().double().cpu().clone() for n, p in model.named_parameters()})
        snaps[-1].update(
            {f"grad/{n}": p.grad.detach().double().cpu().clone() for n, p in model.named_parameters()}
        )

    with tg.Hook(file_uri, save_interval=1, collections=["weights", "biases", "gradients", "losses"]) as hook:
        seen = train(hook, model, steps=6, on_step=snapshot, device=device)
        assert hook.errors == []
    run = trainguard.open_run(file_uri)
    assert run.steps().tolist() == list(range(6))
    first, before, last = snaps[0], snaps[-2], snaps[-1]  # W_0 is the weights the first saved step recorded
    for name, t in last.items():
        expected = {
            "count": t.numel(), "nan": 0, "inf": 0, "zero": int((t == 0).sum()), "min": t.min(), "max": t.max(),
            "mean": t.mean(), "std": t.std(unbiased=False), "abs_mean": t.abs().mean(), "l2": t.norm(),
        }  # fmt: skip
        if not name.startswith("grad/"):
            expected |= {
                "update_l2": (t - before[name]).norm(),
                "distance_l2": (t - first[name].cpu()).norm(),
            }
        for column, value in expected.items():
            got = run.series(name, column).values[-1]
            np.testing.assert_allclose(
                got, float(value), rtol=1e-5, atol=1e-7, err_msg=f"{name} {column} on {device}"
            )
    np.testing.assert_allclose(run.scalars("loss").values, [seen.losses[s] for s in range(6)], rtol=1e-6)


def test_collections_select_what_is_captured(file_uri: str) -> None:
    with tg.Hook(file_uri, save_interval=1, collections=["weights", "gradients", "losses"]) as hook:
        train(hook, mlp(), steps=3)
    run = trainguard.open_run(file_uri)
    assert set(run.collections()) == {"weights", run_format.INITIAL_COLLECTION, "gradients", "losses"}
    assert "grad/0.bias" in run.collections()["gradients"]  # gradients of biases follow `gradients`


def test_large_tensors_take_the_one_by_one_path_with_the_same_results(file_uri: str) -> None:
    for uri, pack_max in ((file_uri + "-packed", 1 << 20), (file_uri + "-large", 0)):
        with tg.Hook(uri, save_interval=2, pack_max_numel=pack_max, tier1_interval=1) as hook:
            train(hook, mlp(), steps=5)
    packed, large = trainguard.open_run(file_uri + "-packed"), trainguard.open_run(file_uri + "-large")
    for t in packed.tensors():
        if not t.is_scalar:
            for col in ("count", "zero", "mean", "std", "l2", "update_l2", "distance_l2", "max"):
                np.testing.assert_allclose(
                    packed.series(t.name, col).values, large.series(t.name, col).values, rtol=1e-5, atol=1e-7
                )
    hist = [tier1_rows(r, "hists") for r in (packed, large)]
    ids = {t.name: t.id for t in packed.tensors()}
    idl = {t.name: t.id for t in large.tensors()}
    for name in ("0.weight", "grad/2.weight", "act/1"):
        np.testing.assert_array_equal(hist[0][ids[name]], hist[1][idl[name]])


class HeadFirst(nn.Module):
    """Defines its head before its body, and runs the body first: `order` follows the forward pass."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.head = nn.Linear(16, 3)
        self.act = nn.Sigmoid()
        self.body = nn.Linear(8, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.act(self.body(x)))


def test_order_is_the_forward_order_not_the_definition_order(file_uri: str) -> None:
    model = HeadFirst()
    model.eval()
    model(torch.zeros(2, 8))  # an evaluation pass before training numbers nothing
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tg.Hook(file_uri, save_interval=1) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(2):
            opt.zero_grad()
            model(torch.randn(4, 8)).sum().backward()
            opt.step()
        assert not hook._order_handles, "the numbering hooks are gone after the first step"
    cat = {t.name: t for t in trainguard.open_run(file_uri).tensors()}
    orders = {
        name: cat[name].order
        for name in ("body.weight", "grad/body.bias", "act/act", "head.weight", "grad/head.weight")
    }
    assert orders == {
        "body.weight": 0,
        "grad/body.bias": 0,
        "act/act": 1,
        "head.weight": 2,
        "grad/head.weight": 2,
    }


def test_order_is_set_without_an_optimizer_too(file_uri: str) -> None:
    # a hook that only sees forward passes (no registered optimizer) stops numbering at the second
    model = HeadFirst()
    with tg.Hook(file_uri, save_interval=1) as hook:
        hook.register_module(model)
        model(torch.zeros(2, 8))
        assert hook._order_handles, "numbering during the first forward"
        model(torch.zeros(2, 8))
        assert not hook._order_handles
        assert hook._writer is not None
        assert [hook._writer.info(i).order for i in range(4)] == [2, 2, 0, 0]  # head.*, then body.*


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_a_half_precision_model_reads_back_with_its_dtype_and_every_column(
    file_uri: str, dtype: torch.dtype
) -> None:
    # the C kernel reads float32 only: these tensors take the torch path (upcast to float32 on the device)
    model = mlp().to(dtype)
    with tg.Hook(file_uri, save_interval=2, tier1_interval=2) as hook:
        seen = train(hook, model, steps=7, dtype=dtype)
        assert hook.errors == []
    run = trainguard.open_run(file_uri)
    cat = {t.name: t for t in run.tensors()}
    assert {cat[n].dtype for n in ("0.weight", "grad/0.weight", "act/1")} == {
        str(dtype).removeprefix("torch.")
    }
    assert run.steps().tolist() == [0, 2, 4, 6]
    _, l2 = run.series("0.weight", "l2")
    np.testing.assert_allclose(l2, [seen.weight_l2[s] for s in (0, 2, 4, 6)], rtol=1e-5)
    assert (run.series("0.weight", "update_l2").values[1:] > 0).all()
    assert (run.series("act/1", "count").values == 32 * 16).all()
    for name in ("0.weight", "grad/0.weight", "act/1", "act/3"):
        for column in ("min", "max", "mean", "std", "abs_mean", "l2"):
            assert np.isfinite(run.series(name, column).values).all(), (name, column)
    assert any(seg.hists for seg in run.segments())  # Tier 1 as well


def test_the_s3_endpoint_can_come_from_the_config_alone(
    s3_bucket: str, s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = s3_env["AWS_ENDPOINT_URL"]
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    uri = f"s3://{s3_bucket}/run"
    hook = tg.Hook.from_env(
        {"TRAINGUARD_OUT": uri, "TRAINGUARD_S3_ENDPOINT": endpoint, "TRAINGUARD_SAVE_INTERVAL": "2"}
    )
    with hook:
        train(hook, mlp(), steps=6)
        assert hook.errors == []
    run = trainguard.open_run(uri, store=open_store(uri, endpoint_url=endpoint))
    assert run.steps().tolist() == [0, 2, 4]
    end = run.ended()
    assert end is not None and end.status == "ok"


def test_a_script_that_never_calls_close_still_ends_its_run_at_exit(file_uri: str) -> None:
    script = (
        "import trainguard.torch as tg\n"
        "from tests.capture.torch_loop import mlp, tier1_rows, train\n"
        f"hook = tg.Hook({file_uri!r}, save_interval=2, flush_interval_seconds=60)\n"
        "train(hook, mlp(), steps=7)\n"  # and exits: neither close() nor a with block
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    run = trainguard.open_run(file_uri)
    assert run.steps().tolist() == [0, 2, 4, 6]  # the last segment was flushed at exit
    end = run.ended()
    assert end is not None and (end.status, end.last_step) == ("ok", 6)


class TokensAndState(nn.Module):
    """An embedding subclass called like nothing in particular, a GRU, a Linear and a bare parameter."""

    class Table(nn.Embedding):
        pass

    def __init__(self) -> None:
        super().__init__()
        self.tok = self.Table(10, 4)
        self.rnn = nn.GRU(4, 4, batch_first=True)
        self.out = nn.Linear(4, 2)
        self.scale = nn.Parameter(torch.ones(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.rnn(self.tok(x))[0][:, -1]) * self.scale


def test_the_catalogue_names_each_parameters_module_class(file_uri: str) -> None:
    # rules tell an embedding table from a dense kernel by its module's class, not by its name
    model = TokensAndState()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tg.Hook(file_uri, save_interval=1) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        opt.zero_grad()
        model(torch.randint(0, 10, (3, 5))).sum().backward()
        opt.step()
    cat = {t.name: t.module_type for t in trainguard.open_run(file_uri).tensors()}
    assert cat["tok.weight"] == "Embedding"
    assert cat["rnn.weight_hh_l0"] == "GRU"
    assert cat["out.weight"] == cat["out.bias"] == "Linear"
    assert cat["scale"] == "TokensAndState"


def test_an_unsaved_steps_losses_wait_for_the_saved_step_but_a_nan_is_written_at_once(file_uri: str) -> None:
    # unsaved steps' finite losses wait in a list (an append, not the writer's locked path) until the next saved
    # step; a NaN goes to the writer at once with those before it, so its first-NaN flush is as early as ever
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 8), torch.randint(0, 3, (8,))
    with tg.Hook(file_uri, save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        buffered = hook._writer.buffer  # type: ignore[union-attr]
        for _ in range(4):  # steps 0 (saved) to 3
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            hook.record_scalar("loss", loss)
        assert buffered.last_step == 0  # steps 1-3 wait
        hook.record_scalar("loss", float("nan"))  # step 3's second value: not finite
        assert buffered.last_step == 3
        assert buffered._nonfinite_sent  # the first-NaN flush ran
    run = trainguard.open_run(file_uri)
    steps, losses = run.scalars("loss")
    assert steps.tolist() == [0, 1, 2, 3, 3] and np.isnan(losses[-1]) and np.isfinite(losses[:-1]).all()
