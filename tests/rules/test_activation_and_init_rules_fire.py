"""Per-unit activation rules and the start-of-training checks fire on their faults, naming the layer."""

from __future__ import annotations

import numpy as np

from tests.rules.streams import StepData, Stream, first, run
from trainguard.rules.dead_relu import DeadRelu
from trainguard.rules.poor_weight_initialization import PoorWeightInitialization, std_targets
from trainguard.rules.saturated_activation import SaturatedActivation
from trainguard.rules.step_view import COL


def test_dead_relu_fires_on_the_second_tier1_view_after_most_units_die() -> None:
    def die(d: StepData) -> None:
        key = ("active", "act/relu1")
        if d.step >= 300 and key in d.units:
            d.units[key][: int(0.95 * len(d.units[key]))] = 0.0

    f = first(run(DeadRelu(), Stream(fault=die)))
    assert (f.step, f.tensor) == (310, "act/relu1")  # Tier-1 views at 300, 310
    assert f.message.startswith("act/relu1: 60 of 64 units (93.8%) are active on fewer than 1% of samples")


def test_dead_relu_names_the_input_scale_when_the_first_relu_layer_dies() -> None:
    def die(d: StepData) -> None:
        key = ("active", "act/relu0")
        if key in d.units:
            d.units[key][:] = 0.0

    f = first(run(DeadRelu(), Stream(steps=30, fault=die)))
    assert f.tensor == "act/relu0" and f.hint.startswith("check the input scale first")


def test_dead_relu_reports_a_layer_half_dead_only_once_the_loss_stops_improving() -> None:
    def half_dead(d: StepData) -> None:
        key = ("active", "act/relu1")
        if d.step >= 300 and key in d.units:
            d.units[key][: int(0.8 * len(d.units[key]))] = 0.0

    # 80% of the units dead while the loss keeps falling (a small dense layer under Adam): not reported
    assert run(DeadRelu(), Stream(fault=half_dead)) == []

    def half_dead_and_stalled(d: StepData) -> None:
        half_dead(d)
        if d.step >= 300:
            d.scalars["loss"] = 1.0

    f = first(run(DeadRelu(), Stream(fault=half_dead_and_stalled)))
    assert (
        f.step == 410
        and "51 of 64 units (79.7%)" in f.message
        and f.message.endswith("while the loss is not improving; " + DeadRelu.hint)
    )


def test_dead_relu_leaves_a_half_dead_layer_to_a_held_out_metric_that_says_the_model_learns() -> None:
    def half_dead_and_flat(d: StepData) -> None:
        key = ("active", "act/relu1")
        if d.step >= 300 and key in d.units:
            d.units[key][: int(0.8 * len(d.units[key]))] = 0.0
        if d.step >= 300:
            d.scalars["loss"] = 1.0

    def and_the_auc_rises(d: StepData) -> None:
        # the loss flat near its first value, the held-out AUC climbing 0.55 -> 0.9 (a slow learner whose loss lags)
        half_dead_and_flat(d)
        if d.step and d.step % 50 == 0:
            d.eval_scalars["val_auc"] = 0.55 + 0.35 * d.step / 500

    assert run(DeadRelu(), Stream(fault=and_the_auc_rises)) == []
    # the same run without the metric, or with the reading off, is judged by the loss
    assert first(run(DeadRelu(), Stream(fault=half_dead_and_flat))).step == 410
    assert first(run(DeadRelu({"metric_learned_share": None}), Stream(fault=and_the_auc_rises))).step == 410


def test_dead_relu_reports_a_layer_half_dead_after_the_weights_blew_up_while_the_loss_still_falls() -> None:
    def half_dead(d: StepData) -> None:
        key = ("active", "act/relu1")
        if d.step >= 300 and key in d.units:
            d.units[key][: int(0.8 * len(d.units[key]))] = 0.0

    def blown_then_half_dead(d: StepData) -> None:
        # a step far too large at 290 triples every kernel's norm (the loss jumps at it, then falls on): the units it
        # pushed below zero stay dead
        half_dead(d)
        if d.step >= 290:
            for name in d.cols:
                if name.startswith("fc") and name.endswith(".weight"):
                    d.scale(name, 3.0)
        if d.step == 290:
            d.scalars["loss"] *= 3.0

    rule = DeadRelu()
    f = first(run(rule, Stream(fault=blown_then_half_dead)))
    assert (f.step, f.tensor) == (310, "act/relu1") and rule.blown is not None and rule.blown[0] == 290
    assert (
        "51 of 64 units (79.7%)" in f.message and "after the weights' norm grew 3x by step 290" in f.message
    )
    # the same layer without the blow-up (the loss falling) is judged by the gate, and the reading can be turned off
    assert run(DeadRelu(), Stream(fault=half_dead)) == []
    assert run(DeadRelu({"after_blow_up": False}), Stream(fault=blown_then_half_dead)) == []


def test_dead_relu_judges_units_not_elements() -> None:
    def sparse(d: StepData) -> None:
        # 95% of all elements are zero, but every unit fires on 5% of the samples
        d.set("act/relu1", zero=0.95 * d.cols["act/relu1"][COL["count"]])
        key = ("active", "act/relu1")
        if key in d.units:
            d.units[key][:] = 0.05

    assert run(DeadRelu(), Stream(fault=sparse)) == []


def test_dead_relu_respects_threshold_layer_from_a_sagemaker_config() -> None:
    def some_die(d: StepData) -> None:
        key = ("active", "act/relu0")
        if key in d.units:
            d.units[key][:20] = 0.0  # 31% of 64 units

    assert run(DeadRelu(), Stream(steps=100, fault=some_die)) == []
    sagemaker = {"threshold_layer": "25.0", "gate_on_loss": False}  # SageMaker's rule has no loss gate
    f = first(run(DeadRelu(sagemaker), Stream(steps=100, fault=some_die)))
    assert (f.step, f.tensor) == (10, "act/relu0")  # Tier-1 views at 0, 10


def test_saturated_activation_fires_per_unit_on_a_tanh_layer() -> None:
    def saturate(d: StepData) -> None:
        key = ("saturated", "act/tanh2")
        if d.step >= 200 and key in d.units:
            d.units[key][:45] = 1.0

    f = first(run(SaturatedActivation(), Stream(activation="tanh", fault=saturate)))
    assert (f.step, f.tensor) == (220, "act/tanh2")
    assert "45 of 64 units (70.3%) are saturated on more than 99% of samples" in f.message


def test_poor_weight_initialization_names_a_kernel_initialised_ten_times_too_large() -> None:
    def big_init(d: StepData) -> None:
        d.scale("fc1.weight", 10.0)

    found = run(PoorWeightInitialization(), Stream(steps=20, fault=big_init))
    assert [(f.step, f.tensor) for f in found] == [(0, "fc1.weight")]
    assert "above the bound 0.354 (x2)" in found[0].message


def test_poor_weight_initialization_reports_kernels_too_small_when_asked_and_most_of_them_are() -> None:
    def small_init(d: StepData) -> None:
        for i in range(4):
            d.scale(f"fc{i}.weight", 0.05 if i == 2 else 0.1)

    assert run(PoorWeightInitialization(), Stream(steps=20, fault=small_init)) == []  # the small side is off
    found = run(PoorWeightInitialization({"std_ratio_min": 0.5}), Stream(steps=20, fault=small_init))
    assert [(f.step, f.tensor) for f in found] == [
        (0, "fc2.weight")
    ]  # one finding: the smallest against its target
    assert "(x0.5) (4 of 4 kernels are below it)" in found[0].message


def test_poor_weight_initialization_allows_one_small_layer_as_gpt2_and_policy_heads_have() -> None:
    def small_head(d: StepData) -> None:
        d.scale(
            "fc3.weight", 0.01
        )  # a policy head at gain 0.01, a residual projection at 0.02/sqrt(2 n_layer)

    assert run(PoorWeightInitialization({"std_ratio_min": 0.5}), Stream(steps=20, fault=small_head)) == []
    each = run(
        PoorWeightInitialization({"std_ratio_min": 0.5, "small_share": 0}), Stream(steps=20, fault=small_head)
    )
    assert [f.tensor for f in each] == ["fc3.weight"] and "(1 of 4" in each[0].message


def test_poor_weight_initialization_reports_several_all_zero_kernels_once() -> None:
    def zero_init(d: StepData) -> None:
        for i in range(4):
            d.set(f"fc{i}.weight", zero=d.cols[f"fc{i}.weight"][COL["count"]], std=0.0)
            if i < 3:  # behind a zero kernel no gradient reaches the layers before it
                d.set(f"grad/fc{i}.weight", l2=0.0, std=0.0, min=0.0, max=0.0, mean=0.0)

    found = run(PoorWeightInitialization(), Stream(steps=20, fault=zero_init))
    assert len(found) == 1 and found[0].tensor == "fc0.weight"
    assert "4 of 4 kernels are entirely zero" in found[0].message
    assert "3 of them without a gradient: fc0.weight" in found[0].message


def test_poor_weight_initialization_allows_zero_kernels_that_get_a_gradient() -> None:
    # LoRA: each adapter's B is zero beside its random A and a frozen base path, and gets a gradient at once
    def lora(d: StepData) -> None:
        for i in (1, 3):
            d.set(f"fc{i}.weight", zero=d.cols[f"fc{i}.weight"][COL["count"]], std=0.0)

    assert run(PoorWeightInitialization(), Stream(steps=20, fault=lora)) == []


def test_poor_weight_initialization_allows_a_single_zero_initialised_kernel() -> None:
    def lora_b(d: StepData) -> None:
        d.set("fc3.weight", zero=d.cols["fc3.weight"][COL["count"]], std=0.0)

    assert run(PoorWeightInitialization(), Stream(steps=20, fault=lora_b)) == []


def test_poor_weight_initialization_compares_the_initial_loss_with_ln_k() -> None:
    def confident(d: StepData) -> None:
        d.scalars["loss"] = 9.0  # a badly scaled output layer: far from ln 10 = 2.30

    found = run(PoorWeightInitialization({"num_classes": 10}), Stream(steps=20, fault=confident))
    assert [(f.step, f.tensor) for f in found] == [(0, "loss")]
    assert "away from ln 10 = 2.3" in found[0].message
    assert run(PoorWeightInitialization({"num_classes": 10}), Stream(steps=20)) == []


def test_poor_weight_initialization_names_activations_far_from_unit_scale_at_the_start() -> None:
    def raw_units(d: StepData) -> None:  # inputs x1000: the first ReLU's outputs have a std in the hundreds
        d.scale("act/relu0", 800.0)
        d.scale("act/relu1", 300.0)

    found = run(PoorWeightInitialization(), Stream(steps=20, fault=raw_units))
    assert [(f.step, f.tensor) for f in found] == [(0, "act/relu0")]
    assert found[0].message.startswith("act/relu0: activation std 400 at the start is above 50 at step 0")
    assert "(2 of 3 activations)" in found[0].message and found[0].hint.startswith("normalise the inputs")
    assert run(PoorWeightInitialization(), Stream(steps=20)) == []  # std 0.5: quiet


def test_standard_init_targets_cover_pytorch_default_and_he() -> None:
    low, high = std_targets((64, 256))
    assert np.isclose(low, min(1 / np.sqrt(3 * 256), np.sqrt(2 / (256 + 64))))
    assert np.isclose(high, np.sqrt(2 / 64))  # He with the transposed ([in, out]) convention


def test_dead_relu_between_tier1_steps_reports_a_layer_whose_zero_count_proves_most_units_dead() -> None:
    def killed(d: StepData) -> None:
        if d.step >= 203:  # not a Tier-1 step: only the zero count tells
            d.set("act/relu1", zero=0.9995 * d.cols["act/relu1"][COL["count"]])

    f = first(run(DeadRelu(), Stream(fault=killed)))
    assert (f.step, f.tensor) == (204, "act/relu1")  # 2 of 2 views
    # 0.05% non-zero proves more than 90% dead (severe_layer): no gate; 0.1% would prove only 50%
    assert f.message.startswith("act/relu1: 0.05% of its outputs are non-zero, so more than 50% of its units")
    assert "at least 0.5% would be non-zero" in f.message


def squeeze_bottleneck_dies(d: StepData) -> None:
    """act/relu1 as a squeeze-excitation bottleneck (3 outputs a sample, beside conv layers of 64 x 16 x 16) that dies
    for good at step 300."""
    for name in ("act/relu0", "act/relu2"):
        d.set(name, count=64 * 16 * 16 * 64.0, zero=0.6 * 64 * 16 * 16 * 64)
    d.set("act/relu1", count=3 * 64.0, zero=3 * 64.0 if d.step >= 300 else 0.0)
    key = ("active", "act/relu1")
    if d.step >= 300 and key in d.units:
        d.units[key][:] = 0.0


def test_dead_relu_judges_a_tiny_dead_side_branch_by_the_loss() -> None:
    # 0.01% of the watched ReLU outputs, dead while the loss keeps falling: no consequence shows, no report
    assert run(DeadRelu(), Stream(fault=squeeze_bottleneck_dies)) == []
    # the same layer with no floor on its share is reported as a layer killed by a large step is, at once
    found = run(DeadRelu({"severe_min_share": 0.0}), Stream(fault=squeeze_bottleneck_dies))
    assert found and found[0].tensor == "act/relu1" and 300 <= found[0].step <= 310

    def and_the_loss_stalls(d: StepData) -> None:
        squeeze_bottleneck_dies(d)
        if d.step >= 300:
            d.scalars["loss"] = 1.0

    f = first(
        run(DeadRelu(), Stream(fault=and_the_loss_stalls))
    )  # with the loss not improving, it is reported
    assert f.tensor == "act/relu1" and "while the loss is not improving" in f.message


def test_dead_relu_zero_bound_ignores_activations_whose_inactive_outputs_are_not_zero() -> None:
    def killed(d: StepData) -> None:
        d.set("act/tanh1", zero=0.999 * d.cols["act/tanh1"][COL["count"]])

    assert run(DeadRelu(), Stream(activation="tanh", fault=killed)) == []
