"""Each numeric rule fires on its fault at the right step, naming the right tensor, with a readable message."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
import pytest

from tests.rules.streams import StepData, Stream, first, run, saved_every
from trainguard.api.enums import Severity
from trainguard.rules.all_zero import AllZero
from trainguard.rules.exploding_gradient import ExplodingGradient
from trainguard.rules.exploding_tensor import ExplodingTensor
from trainguard.rules.step_view import COL, COLUMNS, StepView, TensorMeta
from trainguard.rules.tensor_variance import TensorVariance
from trainguard.rules.unchanged_tensor import UnchangedTensor
from trainguard.rules.vanishing_gradient import VanishingGradient
from trainguard.rules.weight_update_ratio import WeightUpdateRatio

GRADS = [f"grad/fc{i}.weight" for i in range(4)]


def nan_from_relu1(d: StepData) -> None:
    """A NaN born in the second ReLU at step 300 spreads forward, to every gradient, then to the weights."""
    if d.step < 300:
        return
    for name in ["act/relu1", "act/relu2", *GRADS, "fc0.weight", "fc3.weight"]:
        d.set(name, nan=5, l2=math.nan, mean=math.nan)


def test_exploding_tensor_names_the_first_layer_in_execution_order_at_the_nan_step() -> None:
    found = run(ExplodingTensor(), Stream(fault=nan_from_relu1))
    f = first(found)
    assert (f.step, f.tensor, f.severity) == (300, "act/relu1", Severity.CRITICAL)
    assert "act/relu1: 5 NaN and 0 Inf values of 4096 at step 300 on rank 0" in f.message
    assert "lower the learning rate" in f.message and f.hint


def test_exploding_tensor_names_the_deepest_gradient_first_when_the_nan_starts_in_backward() -> None:
    def backward_nan(d: StepData) -> None:
        if d.step >= 100:
            for name in ("grad/fc1.weight", "grad/fc0.weight", "fc0.weight", "fc1.weight"):
                d.set(name, inf=2)

    f = first(run(ExplodingTensor(), Stream(steps=120, fault=backward_nan)))
    assert (f.step, f.tensor) == (100, "grad/fc1.weight")


def test_exploding_tensor_names_the_loss_when_it_is_non_finite_before_the_backward_pass() -> None:
    def loss_nan(d: StepData) -> None:
        if d.step == 50:
            d.scalars["loss"] = math.inf
            for name in GRADS:
                d.set(name, nan=1)

    f = first(run(ExplodingTensor(), Stream(steps=60, fault=loss_nan)))
    assert (f.step, f.tensor) == (50, "loss")
    assert "loss (train scalar) is inf at step 50" in f.message


def test_exploding_tensor_with_only_nan_ignores_infinities() -> None:
    def inf_only(d: StepData) -> None:
        if d.step >= 10:
            d.set("grad/fc2.weight", inf=3)

    assert run(ExplodingTensor({"only_nan": True}), Stream(steps=30, fault=inf_only)) == []
    assert first(run(ExplodingTensor(), Stream(steps=30, fault=inf_only))).step == 10


def test_exploding_tensor_counts_a_float64_tensor_beyond_float32s_range_unless_only_nan() -> None:
    def overflow(d: StepData) -> None:  # the stored float32 max overflowed; no element is Inf
        if d.step >= 10:
            d.set("fc1.weight", max=math.inf, l2=math.inf)

    assert run(ExplodingTensor({"only_nan": True}), Stream(steps=30, fault=overflow)) == []
    f = first(run(ExplodingTensor(), Stream(steps=30, fault=overflow)))
    assert (f.step, f.tensor, f.value) == (10, "fc1.weight", math.inf)
    assert "beyond float32's range" in f.message


def vanishing(d: StepData) -> None:
    """A deep sigmoid net: gradients shrink towards the input and the loss stays at ln 10 from the start."""
    d.scalars["loss"] = math.log(10) * (1 + 0.01 * math.sin(d.step))
    for i, name in enumerate(GRADS):
        d.scale(name, 10.0 ** (-(9 - 2 * i)))


GATED = {"severe_ratio_threshold": 0}
"""The gated conditions alone: `vanishing` has a first/last ratio of 1e-6, which is severe."""


def test_vanishing_gradient_fires_early_when_the_loss_made_no_progress_since_the_start() -> None:
    f = first(run(VanishingGradient(GATED), Stream(steps=200, fault=vanishing)))
    # no loss 5% below the first one in 50 training steps opens the gate at once, then 3 of 5 views
    assert 50 <= f.step <= 54
    assert f.tensor == "grad/fc0.weight"
    assert "mean |gradient|" in f.message
    assert "while the loss has stayed within 5% of its first value 2.3 for 52 steps" in f.message


def test_vanishing_gradient_fires_once_the_loss_stops_improving_after_some_progress() -> None:
    def learn_then_stall(d: StepData) -> None:
        vanishing(d)
        d.scalars["loss"] *= 1 - 0.5 * min(d.step, 40) / 40  # halves over 40 steps, then flat

    f = first(run(VanishingGradient(GATED), Stream(steps=500, fault=learn_then_stall)))
    # the loss EMA (time constant 50 steps) keeps setting 1% bests until about step 300, then 100
    # steps without one, then 3 of 5
    assert 350 <= f.step <= 420
    assert f.tensor == "grad/fc0.weight" and "while the loss is not improving" in f.message


def test_vanishing_gradient_falls_quiet_once_a_loss_stuck_from_the_start_begins_to_fall() -> None:
    def stuck_then_learning(d: StepData) -> None:
        vanishing(d)
        d.scalars["loss"] *= math.exp(-max(d.step - 80, 0) / 50)  # flat for 80 steps, then falling

    found = run(VanishingGradient(GATED), Stream(steps=200, fault=stuck_then_learning))
    assert found and found[0].step <= 54
    assert max(f.step for f in found) < 90  # 5% below the first loss by step 83 closes the gate


def test_vanishing_gradient_stays_quiet_while_the_loss_improves() -> None:
    def tiny_but_learning(d: StepData) -> None:
        for name in GRADS:  # tiny everywhere (a mean-reduced loss over a large model), not towards the input
            d.scale(name, 1e-9)

    assert run(VanishingGradient(), Stream(steps=300, fault=tiny_but_learning)) == []
    # a first/last ratio just above the severe bound (2.2e-3 against 1.5e-3) waits for the gate as well
    assert (
        run(VanishingGradient(), Stream(steps=300, fault=lambda d: d.scale("grad/fc0.weight", 3.5e-3))) == []
    )


def with_table(v: StepView, abs_mean: float, looked_up: float) -> StepView:
    """`v` with a 200,000 x 8 embedding table (module class Embedding) whose gradient has mean |g| `abs_mean` over
    the whole table and is non-zero in the share `looked_up` of it (the rows a batch looked up)."""
    n = 200_000 * 8
    grad = np.zeros(len(COL))
    grad[COL["count"]], grad[COL["zero"]], grad[COL["abs_mean"]] = n, round(n * (1 - looked_up)), abs_mean
    grad[COL["l2"]] = abs_mean * math.sqrt(n / looked_up)
    weight = np.zeros(len(COL))
    weight[COL["count"]], weight[COL["abs_mean"]], weight[COL["l2"]] = n, 0.8, math.sqrt(n)
    table = TensorMeta("emb.weight", "weights", module="emb", module_type="Embedding", trainable=True,
                       order=-1, shape=(200_000, 8))  # fmt: skip
    meta = (
        table,
        TensorMeta("grad/emb.weight", "gradients", module="emb", order=-1, shape=(200_000, 8)),
        *v.meta,
    )
    return dataclasses.replace(v, names=tuple(m.name for m in meta), meta=meta,
                               stats=np.vstack([weight, grad, v.stats]))  # fmt: skip


def test_vanishing_gradient_judges_a_lookup_table_by_the_rows_a_batch_looked_up() -> None:
    # a loss stuck from the start opens the gate; the dense layers' gradients are healthy
    def stuck(d: StepData) -> None:
        d.scalars["loss"] = 2.3

    views = list(Stream(steps=120, fault=stuck))
    # 0.1% of the rows looked up, 5e-5 each on average: 5e-8 over the whole table is no vanishing
    assert run(VanishingGradient(), [with_table(v, 5e-8, 0.001) for v in views]) == []
    # the rows looked up get 1e-8: vanished, and the finding says over which rows it measured
    found = run(VanishingGradient(), [with_table(v, 1e-11, 0.001) for v in views])
    assert (
        found
        and found[0].tensor == "grad/emb.weight"
        and found[0].message.startswith(
            "grad/emb.weight: mean |gradient| over the 0.1% of its rows a batch looked up 1e-8 is below the threshold 1e-7"
        )
    )


def with_norm(v: StepView, scale: float, bias: float) -> StepView:
    """`v` with a 16-wide LayerNorm (module `norm`) whose scale and bias gradients have mean |g| `scale` and `bias`."""
    rows = []
    for abs_mean in (scale, bias):
        row = np.zeros(len(COL))
        row[COL["count"]], row[COL["abs_mean"]], row[COL["l2"]] = 16, abs_mean, 4 * abs_mean
        rows.append(row)
    meta = (
        TensorMeta("grad/norm.weight", "gradients", module="norm", module_type="LayerNorm", shape=(16,)),
        TensorMeta("grad/norm.bias", "gradients", module="norm", module_type="LayerNorm", shape=(16,)),
        *v.meta,
    )
    return dataclasses.replace(
        v, names=tuple(m.name for m in meta), meta=meta, stats=np.vstack([*rows, v.stats])
    )


def test_vanishing_gradient_leaves_a_bias_its_module_cancels_beside_a_live_scale() -> None:
    # a transformer's last LayerNorm before the difference of two sides' pooled states (the fifty-sixth blind split's
    # draft encoders): the bias shifts both sides alike, its gradient is rounding noise (1e-10) while the scale's is
    # live; both carry the same upstream gradient, so one far below the other is a cancelling sum, not a vanishing one
    def stuck(d: StepData) -> None:
        d.scalars["loss"] = 0.69

    views = list(Stream(steps=120, fault=stuck))
    assert run(VanishingGradient(), [with_norm(v, 1e-3, 1e-10) for v in views]) == []
    # SageMaker counts every tensor, and so does the rule with `biases_beside_live_kernels`
    found = run(
        VanishingGradient({"biases_beside_live_kernels": True}), [with_norm(v, 1e-3, 1e-10) for v in views]
    )
    assert found and found[0].tensor == "grad/norm.bias"
    # a scale that vanished with its bias is no cancellation: the module has no live gradient
    found = run(VanishingGradient(), [with_norm(v, 1e-10, 1e-10) for v in views])
    assert found and found[0].tensor == "grad/norm.weight"


def test_vanishing_gradient_severe_ratio_fires_at_once_while_the_loss_still_falls() -> None:
    def ten_sigmoid_layers(d: StepData) -> None:
        d.scale("grad/fc0.weight", 1e-8)  # about 0.25**10 of the last layer's; the loss falls as usual

    f = first(run(VanishingGradient(), Stream(steps=40, fault=ten_sigmoid_layers)))
    assert (f.step, f.tensor, f.threshold) == (2, "grad/fc0.weight", 1.5e-3)  # 3 of 5 views from the first
    assert "of the last layer's (grad/fc3.weight" in f.message and "below the ratio 0.0015" in f.message
    assert "the loss need not stall" in f.message


def _activations(step: int, stds: list[float], loss: float) -> StepView:
    """A saved view with one activation layer per std, in forward order, and the training loss."""
    names = tuple(f"act/relu{i}" for i in range(len(stds)))
    stats = np.zeros((len(names), len(COLUMNS)))
    stats[:, COL["count"]] = 4096
    stats[:, COL["std"]] = stds
    meta = tuple(TensorMeta(name=n, collection="activations", shape=(64, 64)) for n in names)
    return StepView(step=step, names=names, meta=meta, stats=stats, scalars={"loss": loss})


def test_vanishing_gradient_names_a_forward_signal_that_shrinks_at_every_layer() -> None:
    # He's std written as 2 / fan_in: each ReLU layer's output 5.75-6.7x smaller than the one before, the loss at
    # chance level; found at the third view (3 of 5), no gradient needed
    he_without_root = [0.3, 0.05, 0.0087, 0.0013, 0.0002]
    found = run(VanishingGradient(), [_activations(s, he_without_root, 1.1) for s in range(0, 50, 10)])
    assert [(f.step, f.tensor) for f in found][:1] == [(20, "act/relu4")]
    assert found[0].value == pytest.approx(0.05 / 0.0087) and found[0].threshold == 3
    assert "at each of 4 layers in a row" in found[0].message and "sqrt(2 / fan_in)" in found[0].hint
    # PyTorch's default init without normalisation shrinks 2.5x a layer; a narrow layer or an output layer shrinks
    # once and the next restores the scale: neither vanishes
    for stds in ([0.6, 0.24, 0.1, 0.04, 0.016], [0.3, 0.05, 0.3, 0.05, 0.3]):
        assert run(VanishingGradient(), [_activations(s, stds, 1.1) for s in range(0, 50, 10)]) == []
    # a signal that grows through the body and shrinks into a squeeze-excitation gate (a narrow ReLU over the pooled
    # channels, then the sigmoid) ends near where it entered: 4.8x and 5.8x at the last two layers, 0.14 against 0.4
    into_gate = [0.4, 1.0, 3.0, 4.2, 0.78, 0.135]
    assert run(VanishingGradient(), [_activations(s, into_gate, 0.69) for s in range(0, 50, 10)]) == []
    # the same two shrinks from a first layer at 1.5 leave the signal 11x below it: found
    from_wider = [1.5, 1.0, 3.0, 4.2, 0.78, 0.135]
    found = run(VanishingGradient(), [_activations(s, from_wider, 0.69) for s in range(0, 50, 10)])
    assert [(f.step, f.tensor) for f in found][:1] == [(20, "act/relu5")]
    # the same shrinking net while its loss has halved learns (as for the severe ratio)
    losses = [1.1, 0.4, 0.4, 0.4, 0.4]
    assert (
        run(VanishingGradient(), [_activations(10 * k, he_without_root, x) for k, x in enumerate(losses)])
        == []
    )


def test_vanishing_gradient_severe_ratio_no_longer_counts_once_the_loss_halved() -> None:
    # a GRU recommender over mean-pooled embeddings: its input weights get 1e-3 of the output layer's gradient from
    # step 70 on, by when its loss has fallen 0.70 -> 0.25; it learns, whatever its first layer gets
    def recommender(d: StepData) -> None:
        d.scalars["loss"] = 0.23 + 0.47 * math.exp(-d.step / 25)
        if d.step >= 70:
            d.scale("grad/fc0.weight", 1e-3)

    assert run(VanishingGradient(), Stream(steps=300, fault=recommender)) == []
    # with the severe ratio counting whatever the loss does, it is reported
    f = first(run(VanishingGradient({"severe_loss_fraction": None}), Stream(steps=300, fault=recommender)))
    assert f.step == 72 and "the loss need not stall" in f.message


def test_vanishing_gradient_severe_ratio_fires_on_a_six_layer_sigmoid_net() -> None:
    def six_sigmoid_layers(d: StepData) -> None:
        d.scale(
            "grad/fc0.weight", 6e-4
        )  # a ratio of 3.8e-4, as the realistic suite's 6-layer sigmoid MLP shows

    f = first(run(VanishingGradient(), Stream(steps=40, fault=six_sigmoid_layers)))
    assert (f.step, f.tensor) == (2, "grad/fc0.weight")


def test_vanishing_gradient_severe_ratio_stays_quiet_on_a_deep_but_healthy_sigmoid_net() -> None:
    def four_sigmoid_layers(d: StepData) -> None:
        d.scale(
            "grad/fc0.weight", 5e-3
        )  # a ratio of 3.1e-3; the benchmark's healthy 4-layer sigmoid net reaches 4.3e-3

    assert run(VanishingGradient(), Stream(steps=300, fault=four_sigmoid_layers)) == []


def test_vanishing_gradient_severe_ratio_reads_a_last_layer_that_grew_as_no_vanishing() -> None:
    # a graph network summing its neighbours: the head's gradient grows 2000x over training while the first layer's
    # keeps its level, so their ratio falls below the severe bound with nothing vanished
    def head_grows(d: StepData) -> None:
        d.scale("grad/fc3.weight", 2000.0 ** min(d.step / 200, 1.0))

    assert run(VanishingGradient(), Stream(steps=300, fault=head_grows)) == []

    def first_shrinks(
        d: StepData,
    ) -> (
        None
    ):  # the same fall of the ratio, the first layer's gradient shrinking, while the loss has not halved
        d.scalars["loss"] = 2.3 - 0.5 * min(d.step / 200, 1.0)
        d.scale("grad/fc0.weight", 2000.0 ** -min(d.step / 200, 1.0))

    f = first(run(VanishingGradient(), Stream(steps=300, fault=first_shrinks)))
    assert f.tensor == "grad/fc0.weight" and "the loss need not stall" in f.message


def test_vanishing_gradient_severe_ratio_ignores_an_all_zero_first_gradient() -> None:
    def detached(d: StepData) -> None:
        d.scale("grad/fc0.weight", 0.0)  # not vanished: not connected (all_zero reports it)

    assert run(VanishingGradient(), Stream(steps=100, fault=detached)) == []


def test_vanishing_gradient_ratio_condition_names_the_first_layer() -> None:
    def ratio(d: StepData) -> None:
        d.scalars["loss"] = 2.3
        d.scale("grad/fc0.weight", 1e-5)

    f = first(run(VanishingGradient({"threshold": 1e-12}), Stream(steps=120, fault=ratio)))
    assert f.tensor == "grad/fc0.weight" and "of the last layer's (grad/fc3.weight" in f.message


def test_exploding_gradient_fires_on_a_sustained_jump_naming_the_layer_that_rose() -> None:
    def blow_up(d: StepData) -> None:
        if d.step >= 400:
            d.scale("grad/fc2.weight", 1e3)

    f = first(run(ExplodingGradient(), Stream(fault=blow_up)))
    assert (f.step, f.tensor) == (402, "grad/fc2.weight")  # 3 of 5 views
    assert "global gradient norm" in f.message and "robust z" in f.message


def test_exploding_gradient_leaves_a_jump_that_comes_with_a_loss_falling_steeply_to_its_floor() -> None:
    # a transformer leaving a plateau: from step 340 the loss falls steeply towards a tenth of its level, and over
    # steps 400-419 of that fall the gradients jump 20x; the same jump on the plateau's loss, or on a loss falling
    # without a floor, is reported
    def leaves_plateau(d: StepData) -> None:
        if d.step >= 340:
            d.scalars["loss"] *= max(0.1, 1.0 - (d.step - 340) / 80)
        if 400 <= d.step < 420:
            d.scale("grad/fc2.weight", 20.0)

    assert run(ExplodingGradient(), Stream(fault=leaves_plateau)) == []
    f = first(run(ExplodingGradient({"descent_fraction": None}), Stream(fault=leaves_plateau)))
    assert (f.step, f.tensor) == (402, "grad/fc2.weight")

    def falls_without_a_floor(d: StepData) -> None:
        leaves_plateau(d)
        if d.step >= 340:
            d.scalars["loss"] -= 1.0  # a likelihood without a bound: below 0, no floor to fall towards

    assert first(run(ExplodingGradient(), Stream(fault=falls_without_a_floor))).step == 402


def test_exploding_gradient_absolute_threshold_names_the_largest_gradient() -> None:
    def big(d: StepData) -> None:
        if d.step >= 20:
            d.set("grad/fc1.weight", l2=5e4)

    rule = ExplodingGradient({"threshold": 1e4, "trigger_k": 1, "trigger_n": 1, "z_threshold": 1e9})
    f = first(run(rule, Stream(steps=40, fault=big)))
    assert (f.step, f.tensor, f.threshold) == (20, "grad/fc1.weight", 1e4)
    assert f.message.startswith(
        "grad/fc1.weight: l2 norm 5e4 is above the threshold 1e4 at step 20 on rank 0"
    )


def test_all_zero_names_the_zeroed_gradient() -> None:
    def dead(d: StepData) -> None:
        if d.step >= 100:
            d.set("grad/fc2.weight", zero=d.cols["grad/fc2.weight"][COL["count"]])

    f = first(run(AllZero(), Stream(steps=120, fault=dead)))
    assert (f.step, f.tensor) == (100, "grad/fc2.weight")


def test_exploding_gradient_names_a_gradient_norm_growing_steadily() -> None:
    def unbounded(
        d: StepData,
    ) -> (
        None
    ):  # nll_loss on raw logits: the last layer's gradient grows 2.5% per step, the weights 1% per step
        if d.step >= 100:
            d.scale("grad/fc3.weight", 1.025 ** (d.step - 100))
            for name in [n for n in d.cols if n.startswith("fc") and n.endswith(".weight")]:
                d.scale(name, 1.01 ** (d.step - 100))

    found = run(ExplodingGradient(), Stream(steps=500, fault=unbounded))
    assert found and found[0].step == 299 and found[0].tensor == "gradients"  # windows 100-149 ... 250-299
    assert "grew" in found[0].message and "steadily over 200 steps" in found[0].message
    assert (
        "while the weights' total l2 norm grew 7.53x" in found[0].message
    )  # 1.01 ** 199 and the run's own drift

    # no window ever falls back: a healthy norm that grows 4x over 200 steps is not reported
    def mild(d: StepData) -> None:
        if d.step >= 100:
            d.scale("grad/fc3.weight", 1.007 ** (d.step - 100))

    assert run(ExplodingGradient(), Stream(steps=500, fault=mild)) == []


def test_exploding_gradient_leaves_steady_growth_while_a_held_out_metric_shows_the_fit_improving() -> None:
    # a class-weighted classifier sharpening its fit: gradients and weights grow together while the loss falls and
    # the held-out accuracy climbs from chance; the same growth beside no held-out metric is reported
    def growth(d: StepData) -> None:
        if d.step >= 100:
            d.scale("grad/fc3.weight", 1.02 ** (d.step - 100))
            for name in [n for n in d.cols if n.startswith("fc") and n.endswith(".weight")]:
                d.scale(name, 1.01 ** (d.step - 100))

    def sharpening(d: StepData) -> None:
        growth(d)
        if d.step % 25 == 0:
            d.eval_scalars["val_acc"] = 0.1 + 0.8 * (1 - math.exp(-d.step / 100))

    found = run(
        ExplodingGradient(), Stream(steps=500, fault=growth)
    )  # the stream's eval loss is no quality metric
    assert found and found[0].step == 349 and "steadily over 200 steps" in found[0].message
    assert run(ExplodingGradient(), Stream(steps=500, fault=sharpening)) == []
    found = run(ExplodingGradient({"learned_share": None}), Stream(steps=500, fault=sharpening))
    assert found and found[0].step == 349

    # an eval point between saved steps is read too, though the rule is not checked on it
    rule = ExplodingGradient()
    for step, acc in ((24, 0.2), (49, 0.5), (74, 0.7), (99, 0.8)):
        assert rule.update(StepView(step=step, eval_scalars={"val_acc": acc})) == []
    assert rule.metrics.learned(0.2, 2.0) is not None


def test_exploding_gradient_leaves_gradients_that_grow_while_the_weights_stay_alone() -> None:
    # a Gaussian NLL trained with Adam: the gradients grow as 1/variance while the variance head sharpens, and
    # Adam's bounded steps keep the weights where they were; nothing feeds on itself
    def likelihood_sharpening(d: StepData) -> None:
        if d.step >= 100:
            d.scale("grad/fc3.weight", 1.025 ** (d.step - 100))

    views = list(Stream(steps=500, fault=likelihood_sharpening))
    assert run(ExplodingGradient(), views) == []
    found = run(
        ExplodingGradient({"growth_weight_growth": 1.0}), views
    )  # without the corroboration: reported
    assert (
        found and found[0].step == 299 and "while the weights' total l2 norm grew 1.04x" in found[0].message
    )

    # a run that records no weights is judged on its gradients alone
    def gradients_only(v: StepView) -> StepView:
        keep = [i for i, m in enumerate(v.meta) if m.collection == "gradients"]
        return dataclasses.replace(v, names=tuple(v.names[i] for i in keep), meta=tuple(v.meta[i] for i in keep),
                                   stats=v.stats[keep])  # fmt: skip

    assert run(ExplodingGradient(), [gradients_only(v) for v in views])[0].step == 299


def test_unchanged_tensor_names_the_frozen_layer_after_num_steps() -> None:
    def frozen(d: StepData) -> None:
        if d.step >= 200:
            d.set("fc1.weight", update_l2=0.0)

    f = first(run(UnchangedTensor(), Stream(steps=260, fault=frozen)))
    assert (f.step, f.tensor) == (202, "fc1.weight")
    assert "unchanged for 3 saved steps" in f.message


def test_unchanged_tensor_waits_while_the_schedule_holds_the_learning_rate_near_zero() -> None:
    def cosine_tail(d: StepData) -> None:
        if d.step >= 200:  # the schedule's last steps: updates below float32's resolution of a LayerNorm's 1s
            d.scalars["lr"] *= 1e-3
            d.set("fc1.weight", update_l2=0.0)

    assert run(UnchangedTensor(), Stream(steps=260, fault=cosine_tail)) == []
    f = first(run(UnchangedTensor({"lowered_lr_fraction": None}), Stream(steps=260, fault=cosine_tail)))
    assert (f.step, f.tensor) == (202, "fc1.weight")


def test_unchanged_tensor_ignores_steps_where_nothing_moved() -> None:
    def skipped(d: StepData) -> None:
        if 100 <= d.step < 120:  # e.g. a loss scaler skipping steps, or lr 0
            for i in range(4):
                d.set(f"fc{i}.weight", update_l2=0.0)

    assert run(UnchangedTensor(), Stream(steps=200, fault=skipped)) == []


def test_unchanged_tensor_names_a_run_where_nothing_moves_while_the_optimizer_steps() -> None:
    def thrown_away(d: StepData) -> None:
        if d.step >= 100:  # zero_grad() between backward() and step(): every update is 0, the lr is not
            for i in range(4):
                d.set(f"fc{i}.weight", update_l2=0.0)

    views = (v for v in Stream(steps=200, fault=thrown_away) if v.step % 10 == 0)
    found = run(UnchangedTensor(), views)
    assert [(f.step, f.tensor) for f in found] == [(120, "fc0.weight")]  # steps 91-120 without a change
    assert "none of the 4 trainable tensors changed in the last 30 steps at step 120" in found[0].message
    assert "zero_grad" in found[0].hint


def tiny_lr(d: StepData) -> None:
    """A learning rate 1e5x too small: the loss stays where it started."""
    d.scalars["loss"] = 2.3
    for i in range(4):
        d.cols[f"fc{i}.weight"][COL["update_l2"]] *= 1e-5


def test_weight_update_ratio_fires_when_the_learning_rate_is_far_too_low() -> None:
    f = first(run(WeightUpdateRatio(), Stream(steps=120, fault=tiny_lr)))
    # a loss flat from the start opens the gate after 50 training steps, then 5 of 5
    assert 50 <= f.step <= 56 and f.tensor is not None and f.tensor.endswith(".weight")
    assert "below the threshold 1e-4" in f.message and "raise the learning rate" in f.message


def test_weight_update_ratio_waits_the_same_training_steps_at_save_interval_10_between_eval_points() -> None:
    # the gate counts training steps, not views, and a view carrying only an eval point (steps 24,
    # 49, ...) does not break the 5 saved views in a row: the gate opens at step 50, then 5 of 5
    f = first(run(WeightUpdateRatio(), saved_every(Stream(steps=200, fault=tiny_lr), 10, eval_every=25)))
    assert f.step == 90 and "stayed within 5% of its first value 2.3 for 90 steps" in f.message


def test_weight_update_ratio_low_side_stays_quiet_while_the_schedule_has_lowered_the_learning_rate() -> None:
    # from step 400 the stream's cosine schedule has the LR at 36% of its peak; a flat loss opens the gate
    def tiny_late(d: StepData) -> None:
        if d.step >= 400:
            d.scalars["loss"] = 0.5
            for i in range(4):
                d.cols[f"fc{i}.weight"][COL["update_l2"]] *= 1e-5

    def no_lr(d: StepData) -> None:
        tiny_late(d)
        del d.scalars["lr"]

    assert run(WeightUpdateRatio(), Stream(fault=tiny_late)) == []
    f = first(run(WeightUpdateRatio({"lowered_lr_fraction": None}), Stream(fault=tiny_late)))
    assert f.step > 400 and "below the threshold 1e-4" in f.message
    assert first(run(WeightUpdateRatio(), Stream(fault=no_lr))).step == f.step  # no recorded LR: reported


def test_weight_update_ratio_fires_when_updates_are_larger_than_the_weights() -> None:
    def huge(d: StepData) -> None:
        d.scalars["loss"] = 2.3
        for i in range(4):
            d.cols[f"fc{i}.weight"][COL["update_l2"]] *= 1e4

    f = first(run(WeightUpdateRatio(), Stream(steps=120, fault=huge)))
    assert "above the threshold 1" in f.message and "lower the learning rate" in f.message


def grow_fc2(factor: float, *, from_step: int = 30, per_step: bool = False) -> Callable[[StepData], None]:
    """fc2.weight scaled by `factor` from `from_step` on (or by factor**(steps since then + 1))."""

    def fault(d: StepData) -> None:
        if d.step >= from_step:
            d.scale("fc2.weight", factor ** (d.step - from_step + 1) if per_step else factor)

    return fault


def test_weight_update_ratio_reports_a_blow_up_at_once_naming_the_layer_that_grew() -> None:
    # the loss keeps improving (the gate is closed) and the rule debounces 5 of 5: neither holds a blow-up back
    found = run(WeightUpdateRatio(), Stream(steps=120, fault=grow_fc2(1000.0)))
    assert [(f.step, f.tensor) for f in found] == [
        (30, "fc2.weight")
    ]  # once: the norm grew between 29 and 30
    assert "grew" in found[0].message and "lower the learning rate" in found[0].message
    assert found[0].value is not None and found[0].value > 100
    assert run(WeightUpdateRatio({"blow_up_growth": None}), Stream(steps=120, fault=grow_fc2(1000.0))) == []


def test_weight_update_ratio_measures_weights_that_start_far_below_a_default_init_from_that_init() -> None:
    # a linear probe's head initialised at std 0.01: its norm grows 80x in its first steps, to the norm PyTorch's
    # default initialisation gives its shapes (sqrt(sum of outputs / 3) = 8.21 here; the weights total 20.5 at 1x)
    def small_head_grows(to: float) -> Callable[[StepData], None]:
        def fault(d: StepData) -> None:
            for i in range(4):
                d.scale(f"fc{i}.weight", 0.005 if d.step < 30 else to)

        return fault

    assert (
        run(WeightUpdateRatio(), Stream(steps=60, fault=small_head_grows(0.4))) == []
    )  # 0.1 -> 8.2: 1x that norm (and the stream's drift)
    found = run(
        WeightUpdateRatio(), Stream(steps=60, fault=small_head_grows(2.0))
    )  # 0.1 -> 41: 5.1x that norm
    assert [f.step for f in found] == [30] and (
        "the weights' total l2 norm grew to 5.14x the norm a default initialisation gives these shapes (from far "
        "below it) in 1 step at step 30" in found[0].message
    )


def test_weight_update_ratio_blow_up_threshold_is_per_view_or_per_step_between_close_views() -> None:
    def grow_all(factor: float, from_step: int, steps: int) -> Callable[[StepData], None]:
        """Every weight scaled by factor**k, k = saved steps since `from_step` (at most `steps`)."""

        def fault(d: StepData) -> None:
            for i in range(4):
                d.scale(f"fc{i}.weight", factor ** min(max(d.step - from_step + 1, 0), steps))

        return fault

    def first_step(fault: Callable[[StepData], None], interval: int) -> int | None:
        views = Stream(steps=80, fault=fault)
        found = run(
            WeightUpdateRatio(), saved_every(views, interval, eval_every=25) if interval > 1 else views
        )
        return found[0].step if found else None

    # 2.5x a step for 20 steps: at every step each view (2x a step); 10 steps apart the first view after it (2x)
    assert (first_step(grow_all(2.5, 30, 20), 1), first_step(grow_all(2.5, 30, 20), 10)) == (30, 30)
    # 1.5x a step: not at every step; 10 steps apart it is 57x
    assert (first_step(grow_all(1.5, 30, 20), 1), first_step(grow_all(1.5, 30, 20), 10)) == (None, 40)
    # one jump of 5x: between views 1 step apart, and between views 10 apart (5x is 1.17x a step)
    assert (first_step(grow_all(5.0, 31, 1), 1), first_step(grow_all(5.0, 31, 1), 10)) == (31, 40)
    # 1.8x over 10 steps is neither (below 2x); 3x over 20 steps neither (below 1.07x a step, 3.9x)
    assert first_step(grow_all(1.8**0.1, 30, 10), 10) is None
    assert first_step(grow_all(3.0**0.05, 30, 20), 20) is None


def test_weight_update_ratio_low_side_after_a_blow_up_asks_for_a_lower_learning_rate() -> None:
    def blow_up_then_dead(d: StepData) -> None:
        grow_fc2(1000.0)(d)
        if d.step > 30:  # the units died: no gradient, no update, a flat loss
            tiny_lr(d)
        del d.scalars["lr"]  # (the stream's cosine schedule would keep the low side quiet at its end)

    found = run(WeightUpdateRatio(), Stream(steps=160, fault=blow_up_then_dead))
    low = [f for f in found if "below the threshold" in f.message]
    assert found[0].step == 30 and low and low[0].step > 30
    assert "grew" in low[0].message and "after a blow-up" in low[0].message
    assert low[0].hint is not None and low[0].hint.startswith("lower the learning rate")
    assert "restart from a checkpoint before step 30" in low[0].hint


def test_tensor_variance_names_the_weight_that_diverged() -> None:
    def grow(d: StepData) -> None:
        if d.step >= 100:
            d.set("fc0.weight", std=5.0)

    f = first(run(TensorVariance(), Stream(steps=120, fault=grow)))
    assert (f.step, f.tensor, f.value) == (102, "fc0.weight", 25.0)


def test_exploding_tensor_finds_a_non_finite_scalar_among_huge_finite_ones() -> None:
    views = [
        StepView(step=0, scalars={"a": 1e308, "b": 1e308}),  # the sum overflows; each value is finite
        StepView(step=1, scalars={"a": math.inf, "b": -math.inf}),
        StepView(step=2, eval_scalars={"loss": math.nan}),
    ]
    assert [(f.step, f.tensor) for f in run(ExplodingTensor(), views)] == [(1, "a"), (2, "loss")]


def _mask_rows(layer: str, rows: slice, after: int) -> Callable[[StepData], None]:
    """From `after` on, the rows `rows` of `layer` get no gradient (a gradient mask): their units read 0 moved."""

    def fault(d: StepData) -> None:
        if d.step >= after and ("moved", layer) in d.units:
            d.units[("moved", layer)][rows] = 0.0

    return fault


def test_unchanged_tensor_names_a_layer_whose_units_are_frozen_while_the_rest_moves() -> None:
    f = first(run(UnchangedTensor(), Stream(steps=300, fault=_mask_rows("fc1.weight", slice(3, 20), 200))))
    assert (f.step, f.tensor) == (220, "fc1.weight")  # the third Tier-1 view in a row
    assert "17 of 64 units (26.6%, above 10%) unchanged for at least 3 Tier-1 steps in a row" in f.message
    assert "(units 3, 4, 5, 6, 7, ...)" in f.message and f.value == pytest.approx(100 * 17 / 64)


def test_unchanged_tensor_leaves_a_few_frozen_units_and_skipped_steps_alone() -> None:
    few = _mask_rows("fc1.weight", slice(0, 6), 100)  # 6 of 64 units (9%): e.g. a few dead ReLU units

    def skipped(d: StepData) -> None:  # every unit of every layer still at a Tier-1 view: not a blind zone
        few(d)
        if 150 <= d.step < 200:
            for key in [k for k in d.units if k[0] == "moved"]:
                d.units[key][:] = 0.0

    assert run(UnchangedTensor(), Stream(steps=300, fault=skipped)) == []
    whole_layer = _mask_rows("fc2.weight", slice(None), 100)  # the per-layer check's case, not a unit finding
    found = run(UnchangedTensor(), Stream(steps=300, fault=whole_layer))
    assert found == []  # update_l2 is untouched here, so the per-layer check is quiet too


def test_unchanged_tensor_unit_check_resets_when_the_units_move_again() -> None:
    mask = _mask_rows("fc1.weight", slice(0, 32), 100)

    def thaw_every_third(d: StepData) -> None:
        if d.step % 30 != 0:
            mask(d)

    assert run(UnchangedTensor(), Stream(steps=300, fault=thaw_every_third)) == []
    assert run(UnchangedTensor({"unit_fraction": 100}), Stream(steps=300, fault=mask)) == []


def test_unchanged_tensor_does_not_call_rows_without_a_gradient_frozen() -> None:
    # a recommender's embedding table under plain SGD: rows no batch sampled get an exactly zero gradient and do
    # not move; 40% of the rows, and 45% of the gradient's elements are zero
    mask = _mask_rows("fc1.weight", slice(0, 26), 100)

    def never_sampled(d: StepData) -> None:
        mask(d)
        if d.step >= 100:
            d.set("grad/fc1.weight", zero=0.45 * d.cols["grad/fc1.weight"][COL["count"]])

    assert run(UnchangedTensor(), Stream(steps=300, fault=never_sampled)) == []
    # the same rows with a gradient that does not move them (a row-wise learning rate of 0) are frozen
    f = first(run(UnchangedTensor(), Stream(steps=300, fault=mask)))
    assert (f.step, f.tensor) == (120, "fc1.weight") and "26 of 64 units" in f.message


def test_unchanged_tensor_leaves_rows_behind_dead_units_to_dead_relu() -> None:
    mask = _mask_rows("fc1.weight", slice(0, 32), 100)

    def dead(
        d: StepData,
    ) -> None:  # the masked rows feed units that never fire (the next ReLU, as many units)
        mask(d)
        if ("active", "act/relu1") in d.units and d.step >= 100:
            d.units[("active", "act/relu1")][:32] = 0.0

    assert run(UnchangedTensor(), Stream(steps=300, fault=dead)) == []
    f = first(run(UnchangedTensor(), Stream(steps=300, fault=mask)))  # the same rows behind live units
    assert (f.step, f.tensor) == (120, "fc1.weight") and "32 of 64 units (50%" in f.message


def _missing_as_nan(d: StepData) -> None:
    """A batch with missing values written as NaN, which the model fills: nothing downstream is non-finite."""
    d.set("input/x", nan=700)


def test_exploding_tensor_notes_nan_an_input_carries_alone_once_and_stays_quiet() -> None:
    found = run(ExplodingTensor(), Stream(steps=200, inputs=True, fault=_missing_as_nan))
    assert [(f.tensor, f.severity, f.step) for f in found] == [("input/x", Severity.INFO, 0)]
    assert "missing values written as NaN" in found[0].message
    # switched off, the input is reported as any non-finite tensor
    off = first(
        run(
            ExplodingTensor({"inputs_carry_nan": False}), Stream(steps=30, inputs=True, fault=_missing_as_nan)
        )
    )
    assert (off.tensor, off.severity) == ("input/x", Severity.CRITICAL)


def test_exploding_tensor_names_the_input_when_its_nan_reaches_the_model() -> None:
    def unfilled(d: StepData) -> None:
        _missing_as_nan(d)
        if d.step >= 100:  # the fill is dropped: the NaN flows into the first layer
            d.set("act/relu0", nan=3, l2=math.nan, mean=math.nan)

    found = run(ExplodingTensor(), Stream(steps=200, inputs=True, fault=unfilled))
    critical = [f for f in found if f.severity == Severity.CRITICAL]
    assert (critical[0].step, critical[0].tensor) == (100, "input/x")
    assert "1 more tensors after it" in critical[0].message
