"""`input_scale` flags inputs a broken pipeline feeds (pixels scaled twice, normalised twice, far beyond a
normalised range, wrapped around in uint8 mid-run) with the evidence, and stays quiet on healthy inputs."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tests.rules.streams import columns
from trainguard.rules import registry
from trainguard.rules.base import Finding
from trainguard.rules.input_scale import InputScale
from trainguard.rules.step_view import COL, StepView, TensorMeta

N = 64 * 3 * 12 * 12
"""Values of a batch of 64 small RGB images."""
META = (
    TensorMeta("input/x", "inputs", shape=(64, 3, 12, 12)),
    TensorMeta("fc.weight", "weights", trainable=True, shape=(10, 432)),
)


def _view(step: int, x: np.ndarray) -> StepView:
    return StepView(step=step, names=tuple(m.name for m in META), meta=META,
                    stats=np.stack([x, columns(n=4320, std=0.05)]), scalars={"loss": 1.0})  # fmt: skip


def _normalised(step: int) -> np.ndarray:
    """Normalised pixels of a healthy run: mean near 0, std near 1, batch to batch a little noise."""
    rng = np.random.default_rng(step)
    x = columns(n=N, mean=0.02 * rng.standard_normal(), std=1 + 0.02 * rng.standard_normal())
    x[COL["min"]], x[COL["max"]] = -0.6, 3.8  # dark images: black is -0.6, white 3.8
    return x


def _run(x: Callable[[int], np.ndarray], steps: int = 300, rule: InputScale | None = None) -> list[Finding]:
    rule = rule or InputScale()
    return [f for step in range(0, steps, 10) for f in rule.update(_view(step, x(step)))]


def test_healthy_normalised_inputs_and_a_jitter_switched_on_mid_run_give_no_finding() -> None:
    def jitter_from_100(step: int) -> np.ndarray:
        x = _normalised(step)
        if step >= 100:  # a clamped brightness jitter: slightly brighter and wider
            x[COL["mean"]] += 0.12
            x[COL["std"]] *= 1.05
        return x

    assert _run(_normalised) == []
    assert _run(jitter_from_100) == []


def test_a_uint8_wrap_around_from_mid_run_is_flagged_with_its_distance_from_the_start() -> None:
    def wraps_from_100(step: int) -> np.ndarray:
        x = _normalised(step)
        if step >= 100:  # dark pixels shifted down wrap around to bright ones
            x[COL["mean"]], x[COL["std"]] = 1.2, 1.6
        return x

    found = _run(wraps_from_100)
    assert found and found[0].step == 120  # three of five views: 100, 110, 120
    f = found[0]
    assert f.rule == "input_scale" and f.tensor == "input/x" and f.severity.value == "warning"
    assert f.threshold == 0.75 and f.value is not None and 1.3 < f.value < 1.4
    assert "moved 1.35 start spreads from the start (mean 1.2, std 1.6 against mean" in f.message
    assert "over steps 0-40" in f.message and "at step 120 on rank 0" in f.message
    assert "uint8 arithmetic wraps around" in f.message


def test_inputs_whose_batches_are_set_by_a_few_extreme_values_are_not_read_for_drift() -> None:
    # reflectance ratios with rare extremes: every batch spans 40-60 of its own std, which moves 0.5-40 from one
    # batch to the next (here after a start that happened to be steady, so that the width alone keeps it quiet);
    # the moments say nothing of a pipeline change, and the same moves on light-tailed pixels do
    def heavy_tailed(step: int) -> np.ndarray:
        rng = np.random.default_rng(step)
        std = float(np.exp(rng.uniform(np.log(0.5), np.log(40)))) if step >= 50 else 2.0
        x = columns(n=N, mean=0.2 + 0.1 * rng.standard_normal(), std=std)
        x[COL["min"]], x[COL["max"]] = -20 * std, 30 * std
        return x

    assert _run(heavy_tailed) == []
    assert _run(heavy_tailed, rule=InputScale({"max_tail_width": None}))  # read anyway: its batches "moved"


def test_inputs_whose_start_batches_already_differ_by_more_than_the_limit_are_not_read_for_drift() -> None:
    # log band powers of audio frames: a batch of mostly silence has std near 1.2, one of mostly speech 2.5-4.5;
    # the start's five batches already lie up to 1.5 start spreads from their median, so a batch of speech later
    # is no pipeline change
    stds = [2.44, 1.3, 1.27, 3.15, 1.14]

    def speech_and_silence(step: int) -> np.ndarray:
        std = stds[step // 10] if step < 50 else (4.03, 1.25, 2.43, 3.2)[step // 10 % 4]
        x = columns(n=N, mean=-0.3 * std, std=std)
        x[COL["min"]], x[COL["max"]] = -4 * std, 2 * std
        return x

    assert _run(speech_and_silence) == []
    steady_start = InputScale()  # the same later batches after a start that never varied: read, and found
    assert _run(
        lambda step: speech_and_silence(step) if step >= 50 else speech_and_silence(10), rule=steady_start
    )


def test_a_state_from_before_the_start_spread_was_kept_reads_as_a_steady_start() -> None:
    rule = InputScale()
    rule.set_state({"reference": {"input/x": [0.0, 1.0, 4.0]}, "first_step": {"input/x": [0, 40]}})
    assert rule.reference["input/x"] == (0.0, 1.0, 4.0, 0.0)
    x = _normalised(200)
    x[COL["mean"]], x[COL["std"]] = 1.2, 1.6
    assert [f for step in (200, 210, 220) for f in rule.update(_view(step, x))]


def test_pixels_divided_by_255_twice_are_flagged_from_the_start() -> None:
    def twice(step: int) -> np.ndarray:
        x = _normalised(step)
        x[COL["min"]], x[COL["max"]], x[COL["mean"]], x[COL["std"]] = 0.0, 0.0039, 0.0006, 0.0009
        return x

    found = _run(twice)
    assert found and found[0].step == 20
    assert "every value lies within [0, 0.0039], no larger than 0.00392" in found[0].message
    assert "divided by 255 twice" in found[0].message and "ToTensor already scales" in found[0].message


def test_pixels_normalised_twice_are_flagged_as_nearly_constant() -> None:
    def twice(step: int) -> np.ndarray:
        x = _normalised(step)
        x[COL["min"]], x[COL["max"]], x[COL["mean"]], x[COL["std"]] = -0.61, -0.5, -0.58, 0.022
        return x

    found = _run(twice)
    assert found and found[0].step == 20
    assert "nearly constant: std 0.022 is 3.79% of the mean -0.58 (below 10%" in found[0].message
    assert found[0].value is not None and abs(found[0].value - 0.022 / 0.58) < 1e-9


def test_raw_units_with_an_offset_are_not_normalised_twice() -> None:
    # a sales series around 550 fed raw to a model that standardises each window itself (RevIN): 5% spread
    def raw_sales(step: int) -> np.ndarray:
        x = _normalised(step)
        x[COL["min"]], x[COL["max"]], x[COL["mean"]], x[COL["std"]] = 500.0, 600.0, 550.0, 28.0
        return x

    assert _run(raw_sales) == []
    assert _run(
        raw_sales, rule=InputScale({"constant_max_std": None})
    )  # the spread alone would call it constant


def test_values_far_beyond_a_normalised_range_are_flagged() -> None:
    def raw(step: int) -> np.ndarray:
        x = _normalised(step)
        x[COL["min"]], x[COL["max"]], x[COL["mean"]], x[COL["std"]] = 0.0, 65025.0, 30000.0, 20000.0
        return x

    found = _run(raw, rule=InputScale({"max_abs": 1e4}))  # off by default: packed categorical codes reach 2e5
    assert found and "values reach 6.5e4" in found[0].message and found[0].threshold == 1e4
    assert not _run(raw), "max_abs is off by default"


def test_small_or_non_finite_inputs_are_not_judged() -> None:
    def small(step: int) -> np.ndarray:
        x = _normalised(step)
        x[COL["count"]], x[COL["max"]], x[COL["min"]] = 8, 0.001, 0.0  # a scalar-like argument
        return x

    def nan(step: int) -> np.ndarray:
        x = _normalised(step)
        x[COL["nan"]], x[COL["max"]], x[COL["min"]] = 3, 0.001, 0.0  # exploding_tensor's to report
        return x

    assert _run(small) == [] and _run(nan) == []


def test_a_run_without_inputs_is_not_checked() -> None:
    rule = registry.BUILTINS["input_scale"]()
    assert rule.needs == "model inputs"
    rule.update(StepView(step=0, names=("fc.weight",), meta=META[1:], stats=columns(n=4320, std=0.05)[None]))
    assert not rule.checked
    rule.update(_view(10, _normalised(10)))
    assert rule.checked


def test_the_start_survives_a_restart_from_the_rule_state() -> None:
    def wraps_from_100(step: int) -> np.ndarray:
        x = _normalised(step)
        if step >= 100:
            x[COL["mean"]], x[COL["std"]] = 1.2, 1.6
        return x

    whole = _run(wraps_from_100)
    first = InputScale()
    for step in range(0, 30, 10):  # mid-way through gathering the start
        first.update(_view(step, wraps_from_100(step)))
    resumed = InputScale()
    resumed.load_state_dict(first.state_dict())
    found = [f for step in range(30, 300, 10) for f in resumed.update(_view(step, wraps_from_100(step)))]
    assert [f.to_dict() for f in found] == [f.to_dict() for f in whole]


def _with_first_activation(
    x: np.ndarray, act: str, act_std: float, *, first: str = "act/net.1", shape: tuple[int, ...] = (64, 12)
) -> StepView:
    """A view of input `x` and two activations in forward order, `first` (of kind `act`, std `act_std`) before a
    second, unremarkable one; the rows are listed in the opposite order, as a catalogue need not keep forward order."""
    meta = (
        TensorMeta("input/x", "inputs", shape=shape),
        TensorMeta("act/net.3", "activations", activation="relu", order=3, shape=(64, 32)),
        TensorMeta(first, "activations", activation=act, order=1, shape=(64, 32)),
    )
    lo = -1.0 if act == "tanh" else 0.0
    a = columns(n=2048, std=act_std, mean=0.5 if act == "sigmoid" else 0.0)
    a[COL["min"]], a[COL["max"]] = lo, 1.0 if act in ("tanh", "sigmoid") else 40 * act_std
    stats = np.stack([x, columns(n=2048, std=0.4), a])
    return StepView(step=0, names=tuple(m.name for m in meta), meta=meta, stats=stats, scalars={"loss": 1.0})


def _raw_input(std: float) -> np.ndarray:
    x = columns(n=768, mean=1.7, std=std)
    x[COL["min"]], x[COL["max"]] = -6 * std, 7 * std
    return x


def test_raw_units_that_reach_the_first_activation_are_flagged_with_both_signs() -> None:
    # temperatures centred but left in degrees (std 50) before a tanh layer: the tanh is pinned at +-1
    f = InputScale().check(_with_first_activation(_raw_input(50.0), "tanh", 0.98))
    assert len(f) == 1 and f[0].tensor == "input/x" and f[0].threshold == 0.9
    assert f[0].value is not None and abs(f[0].value - 0.98) < 1e-9
    assert (
        "std 50 (values within [-300, 350]), above 10, and the first activation act/net.1 (tanh) is pinned"
        in (f[0].message)
    )
    assert "98% of the 1 of outputs split between its two bounds" in f[0].message
    assert "raw units reach the network unnormalised" in f[0].message and "log1p" in (f[0].hint or "")
    # a sigmoid's half range is 0.5: pinned at 0.45
    assert InputScale().check(_with_first_activation(_raw_input(50.0), "sigmoid", 0.47, first="act/gate"))
    assert not InputScale().check(_with_first_activation(_raw_input(50.0), "sigmoid", 0.3, first="act/gate"))
    # raw counts (std 14) through a first ReLU layer: its outputs' std 4.8, above 3
    f = InputScale().check(_with_first_activation(_raw_input(14.0), "relu", 4.8))
    assert (
        len(f) == 1
        and f[0].value == 4.8
        and f[0].threshold == 3.0
        and "(relu) is std 4.8, above 3" in f[0].message
    )


def test_either_sign_alone_is_not_raw_units() -> None:
    # wide categorical codes normalised by a BatchNorm before the first ReLU: its outputs at unit scale
    assert not InputScale().check(_with_first_activation(_raw_input(1500.0), "relu", 0.58))
    # a tanh that spreads its outputs over the range, not pinned at its ends
    assert not InputScale().check(_with_first_activation(_raw_input(50.0), "tanh", 0.6))
    # standardised inputs with a wide first layer of ReLUs (the widest healthy first activation, 2.5) or a pinned
    # tanh (a large init): that is poor_weight_initialization's or saturated_activation's to judge
    assert not InputScale().check(_with_first_activation(_raw_input(1.0), "relu", 2.5))
    assert not InputScale().check(_with_first_activation(_raw_input(1.0), "tanh", 0.99))
    # an activation kind that is neither bounded nor in the unbounded family (softmax), and none with an order
    assert not InputScale().check(_with_first_activation(_raw_input(50.0), "softmax", 40.0))
    assert not InputScale({"raw_min_std": None}).check(_with_first_activation(_raw_input(50.0), "tanh", 0.98))
    x = _raw_input(50.0)
    view = StepView(step=0, names=("input/x", "act/a"), meta=(TensorMeta("input/x", "inputs"),
                    TensorMeta("act/a", "activations", activation="tanh")),
                    stats=np.stack([x, columns(n=2048, std=0.99)]))  # fmt: skip
    assert not InputScale().check(view), "without a forward order there is no first activation"


def test_a_small_batch_of_feature_rows_is_read_for_raw_units_only() -> None:
    # 32 rows of 11 features (352 values, below min_elements), a column left in mg/L: read for raw units
    x = _raw_input(46.0)
    x[COL["count"]] = 352
    assert InputScale().check(_with_first_activation(x, "relu", 16.4, shape=(32, 11)))
    # a per-sample scalar of a batch of 352 (a timestep) is not: no two values per sample, or no shape at all
    assert not InputScale().check(_with_first_activation(x, "relu", 16.4, shape=(352,)))
    assert not InputScale().check(_with_first_activation(x, "relu", 16.4, shape=(352, 1)))
    assert not InputScale().check(_with_first_activation(x, "relu", 16.4, shape=()))
    # fewer than raw_min_elements values; and the other readings still need min_elements (pixels scaled twice)
    x[COL["count"]] = 48
    assert not InputScale().check(_with_first_activation(x, "relu", 16.4, shape=(4, 12)))
    small = columns(n=352, mean=0.002, std=0.001)
    small[COL["min"]], small[COL["max"]] = 0.0, 0.0039
    assert not InputScale().check(_with_first_activation(small, "relu", 0.5, shape=(32, 11)))
    assert InputScale({"min_elements": 64}).check(_with_first_activation(small, "relu", 0.5, shape=(32, 11)))
