"""The detection benchmark's fast subset: a few programs of `benchmarks/detection/`, one seed.

Each fault program is trained (numpy through `trainguard.Recorder`, two through the real PyTorch
hook), read back through the store as the evaluator's views, and scored with the default rule set
exactly as `benchmarks.detection.run` scores it: the rule meant for the fault must report it, and
the healthy and hard-negative runs must raise nothing at warning or above.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.detection import programs, run, torch_programs
from benchmarks.detection.torch_real import suite as torch_real
from trainguard.rules import registry

SEED = 0  # a calibration seed: the defaults were set on these

FAULTS = {
    "F2_lr_x1e-4": "weight_update_ratio",
    "F3_vanishing_sigmoid": "vanishing_gradient",
    "F5_dead_relu_bias": "dead_relu",
    "F13_deep_relu_x3": "exploding_tensor",
    "F18_optimizer_misses_layer": "unchanged_tensor",
    "torch_F1_lr_x100": "exploding_tensor",
    "torch_F18_optimizer_misses_layer": "unchanged_tensor",
}
HEALTHY = (
    "H1_relu_momentum",
    "N1_sparse_relu",
    "N3_warmup_cosine",
    "N10_sigmoid_deeper",
    # saved at every step, seed 0 of these alarmed before `oscillating_loss` asked for 95% flips and
    # `weight_update_ratio`'s low side waited out a lowered learning rate
    "N1_sparse_relu_every_step",
    "N3_warmup_cosine_every_step",
    "torch_H1_relu_momentum",
)
CATALOGUE = {p.name: p for p in (*programs.catalogue(), *torch_programs.catalogue())}


def outcome(name: str, root: Path, *, save_interval: int | None = None) -> run.Outcome:
    program = (
        CATALOGUE[name] if save_interval is None else replace(CATALOGUE[name], save_interval=save_interval)
    )
    truth = run._train_one((program, SEED, str(root)))
    return run.evaluate_rules(registry.default_rules(), run.load_views(str(root), truth))


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_each_fault_is_reported_by_its_intended_rule(name: str, tmp_path: Path) -> None:
    found = outcome(name, tmp_path)
    assert FAULTS[name] in found.rules, (
        f"{name}: {FAULTS[name]} did not report it; rules that did: {found.rules}"
    )
    assert FAULTS[name] in CATALOGUE[name].intended_rules
    layer = CATALOGUE[name].affected_layer
    assert layer is None or layer in found.layers


@pytest.mark.parametrize("name", HEALTHY)
def test_healthy_and_hard_negative_runs_stay_quiet(name: str, tmp_path: Path) -> None:
    found = outcome(name, tmp_path)
    assert found.alarm_step is None, f"{name}: {sorted(found.rules)} fired from step {found.alarm_step}"


def test_a_learning_rate_far_too_low_is_reported_at_the_hooks_default_save_interval(tmp_path: Path) -> None:
    # saved every 10th step with an eval point every 25 in between, seed 0 went unreported while the
    # loss gate counted views and the eval points broke weight_update_ratio's 5 saved views in a row
    found = outcome("F2_lr_x1e-4", tmp_path, save_interval=10)
    assert "weight_update_ratio" in found.rules, f"rules that reported it: {found.rules}"


# The realistic PyTorch suite (`--suite torch-real`): a few programs through the real hook at save_interval 10,
# seed 0 (calibration). Each healthy one once drew a warning: a user table called `user` judged as a dense kernel,
# never-sampled embedding rows called frozen, a GAN's discriminator loss called not decreasing.
REAL = {p.name: p for p in torch_real.catalogue()}
REAL_HEALTHY = (
    "real_mf_plain_sgd_sparse_usage",
    "real_gan_bce_two_optimizers",
    "real_binary_noisy_bayes_floor",
    "real_gaussian_nll_heteroscedastic_adam",  # a loss below zero by design: a fall without bound, measured from 0
    "real_linear_probe_frozen_cnn_momentum",  # a head at std 0.01: a weight blow-up at step 10
    "real_images_uint8_jitter_after_warmup",  # its inputs move when the (clamped) jitter starts
)
REAL_BUGS = {
    "real_B01_nll_loss_on_raw_logits": "diverging_loss",
    "real_B02_labels_shuffled_apart_from_inputs": "loss_not_decreasing",
    "real_B21_zero_grad_between_backward_and_step": "unchanged_tensor",
    "real_B37_uint8_brightness_wraps_around": "input_scale",
    "real_B38_pixels_normalised_twice": "input_scale",
}


def real_outcome(name: str, root: Path) -> run.Outcome:
    truth = run._train_one((REAL[name], SEED, str(root)))
    return run.evaluate_rules(registry.default_rules(), run.load_views(str(root), truth))


@pytest.mark.parametrize("name", REAL_HEALTHY)
def test_realistic_healthy_pytorch_programs_stay_quiet(name: str, tmp_path: Path) -> None:
    found = real_outcome(name, tmp_path)
    assert found.alarm_step is None, f"{name}: {sorted(found.rules)} fired from step {found.alarm_step}"


@pytest.mark.parametrize("name", sorted(REAL_BUGS))
def test_realistic_pytorch_bugs_are_named_by_their_rule_within_150_steps(name: str, tmp_path: Path) -> None:
    found = real_outcome(name, tmp_path)
    rule = REAL_BUGS[name]
    assert rule in REAL[name].intended_rules
    assert rule in found.first_by_label and found.first_by_label[rule] <= 150, (
        f"{name}: {found.first_by_label}"
    )
