"""The blind splits of the detection benchmark (`benchmarks/detection/blind/`, `blind2/`, ..., `blind17/`, `blind18/`, `blind19/`, `blind20/`, `blind21/`, `blind22/`, `blind23/`, `blind24/`, `blind25/`, `blind26/`, `blind27/`, `blind28/`, `blind29/`, `blind30/`, `blind31/`, `blind32/`, `blind33/`, `blind34/`, `blind35/`, `blind36/`, `blind37/`, `blind38/`, `blind39/`, `blind40/`, `blind41/`, `blind42/`, `blind43/`, `blind44/`, `blind45/`, `blind46/`, `blind47/`, `blind48/`, `blind49/`, `blind50/`, `blind51/`, `blind52/`, `blind53/`, `blind54/`, `blind55/`, `blind56/`, `blind57/`, `blind58/`, `blind59/`, `blind60/`, `blind61/`, `blind62/`, `blind63/`, `blind64/`, `blind65/`, `blind66/`, `blind67/`)
are declared consistently, each apart from the splits before it, the runner offers each of them, a healthy program
of each runs through the real hook, and the oracle labels a harmful bug of a later split against its twin.

No rule is built or run here: a split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from benchmarks.detection import run
from benchmarks.detection.blind import suite as first
from benchmarks.detection.blind.smoke import saved_steps
from benchmarks.detection.blind2 import suite as second
from benchmarks.detection.blind3 import suite as third
from benchmarks.detection.blind4 import suite as fourth
from benchmarks.detection.blind5 import suite as fifth
from benchmarks.detection.blind6 import suite as sixth
from benchmarks.detection.blind7 import suite as seventh
from benchmarks.detection.blind8 import suite as eighth
from benchmarks.detection.blind9 import suite as ninth
from benchmarks.detection.blind10 import suite as tenth
from benchmarks.detection.blind11 import suite as eleventh
from benchmarks.detection.blind12 import suite as twelfth
from benchmarks.detection.blind13 import suite as thirteenth
from benchmarks.detection.blind14 import suite as fourteenth
from benchmarks.detection.blind15 import suite as fifteenth
from benchmarks.detection.blind16 import suite as sixteenth
from benchmarks.detection.blind17 import suite as seventeenth
from benchmarks.detection.blind18 import suite as eighteenth
from benchmarks.detection.blind19 import suite as nineteenth
from benchmarks.detection.blind20 import suite as twentieth
from benchmarks.detection.blind21 import suite as twentyfirst
from benchmarks.detection.blind22 import suite as twentysecond
from benchmarks.detection.blind23 import suite as twentythird
from benchmarks.detection.blind24 import suite as twentyfourth
from benchmarks.detection.blind25 import suite as twentyfifth
from benchmarks.detection.blind26 import suite as twentysixth
from benchmarks.detection.blind27 import suite as twentyseventh
from benchmarks.detection.blind28 import suite as twentyeighth
from benchmarks.detection.blind29 import suite as twentyninth
from benchmarks.detection.blind30 import suite as thirtieth
from benchmarks.detection.blind31 import suite as thirtyfirst
from benchmarks.detection.blind32 import suite as thirtysecond
from benchmarks.detection.blind33 import suite as thirtythird
from benchmarks.detection.blind34 import suite as thirtyfourth
from benchmarks.detection.blind35 import suite as thirtyfifth
from benchmarks.detection.blind36 import suite as thirtysixth
from benchmarks.detection.blind37 import suite as thirtyseventh
from benchmarks.detection.blind38 import suite as thirtyeighth
from benchmarks.detection.blind39 import suite as thirtyninth
from benchmarks.detection.blind40 import suite as fortieth
from benchmarks.detection.blind41 import suite as fortyfirst
from benchmarks.detection.blind42 import suite as fortysecond
from benchmarks.detection.blind43 import suite as fortythird
from benchmarks.detection.blind44 import suite as fortyfourth
from benchmarks.detection.blind45 import suite as fortyfifth
from benchmarks.detection.blind46 import suite as fortysixth
from benchmarks.detection.blind47 import suite as fortyseventh
from benchmarks.detection.blind48 import suite as fortyeighth
from benchmarks.detection.blind49 import suite as fortyninth
from benchmarks.detection.blind50 import suite as fiftieth
from benchmarks.detection.blind51 import suite as fiftyfirst
from benchmarks.detection.blind52 import suite as fiftysecond
from benchmarks.detection.blind53 import suite as fiftythird
from benchmarks.detection.blind54 import suite as fiftyfourth
from benchmarks.detection.blind55 import suite as fiftyfifth
from benchmarks.detection.blind56 import suite as fiftysixth
from benchmarks.detection.blind57 import suite as fiftyseventh
from benchmarks.detection.blind58 import suite as fiftyeighth
from benchmarks.detection.blind59 import suite as fiftyninth
from benchmarks.detection.blind60 import suite as sixtieth
from benchmarks.detection.blind61 import suite as sixtyfirst
from benchmarks.detection.blind62 import suite as sixtysecond
from benchmarks.detection.blind63 import suite as sixtythird
from benchmarks.detection.blind64 import suite as sixtyfourth
from benchmarks.detection.blind65 import suite as sixtyfifth
from benchmarks.detection.blind66 import suite as sixtysixth
from benchmarks.detection.blind67 import suite as sixtyseventh

SPLITS = {
    "blind": (first, 24, 16),
    "blind2": (second, 28, 16),
    "blind3": (third, 28, 12),
    "blind4": (fourth, 30, 14),
    "blind5": (fifth, 30, 14),
    "blind6": (sixth, 30, 8),
    "blind7": (seventh, 28, 16),
    "blind8": (eighth, 28, 17),
    "blind9": (ninth, 28, 9),
    "blind10": (tenth, 28, 17),
    "blind11": (eleventh, 24, 15),
    "blind12": (twelfth, 24, 17),
    "blind13": (thirteenth, 24, 18),
    "blind14": (fourteenth, 24, 18),
    "blind15": (fifteenth, 24, 17),
    "blind16": (sixteenth, 24, 17),
    "blind17": (seventeenth, 24, 17),
    "blind18": (eighteenth, 24, 17),
    "blind19": (nineteenth, 24, 17),
    "blind20": (twentieth, 24, 17),
    "blind21": (twentyfirst, 24, 17),
    "blind22": (twentysecond, 24, 17),
    "blind23": (twentythird, 24, 17),
    "blind24": (twentyfourth, 24, 17),
    "blind25": (twentyfifth, 24, 17),
    "blind26": (twentysixth, 24, 17),
    "blind27": (twentyseventh, 24, 17),
    "blind28": (twentyeighth, 24, 17),
    "blind29": (twentyninth, 24, 17),
    "blind30": (thirtieth, 24, 17),
    "blind31": (thirtyfirst, 24, 17),
    "blind32": (thirtysecond, 24, 17),
    "blind33": (thirtythird, 24, 17),
    "blind34": (thirtyfourth, 24, 17),
    "blind35": (thirtyfifth, 24, 17),
    "blind36": (thirtysixth, 24, 17),
    "blind37": (thirtyseventh, 24, 17),
    "blind38": (thirtyeighth, 24, 17),
    "blind39": (thirtyninth, 24, 17),
    "blind40": (fortieth, 24, 17),
    "blind41": (fortyfirst, 24, 17),
    "blind42": (fortysecond, 24, 17),
    "blind43": (fortythird, 24, 17),
    "blind44": (fortyfourth, 24, 17),
    "blind45": (fortyfifth, 24, 17),
    "blind46": (fortysixth, 24, 17),
    "blind47": (fortyseventh, 24, 17),
    "blind48": (fortyeighth, 24, 17),
    "blind49": (fortyninth, 24, 17),
    "blind50": (fiftieth, 24, 17),
    "blind51": (fiftyfirst, 24, 17),
    "blind52": (fiftysecond, 24, 17),
    "blind53": (fiftythird, 24, 17),
    "blind54": (fiftyfourth, 24, 17),
    "blind55": (fiftyfifth, 24, 17),
    "blind56": (fiftysixth, 24, 17),
    "blind57": (fiftyseventh, 24, 17),
    "blind58": (fiftyeighth, 24, 17),
    "blind59": (fiftyninth, 24, 17),
    "blind60": (sixtieth, 24, 17),
    "blind61": (sixtyfirst, 24, 17),
    "blind62": (sixtysecond, 24, 17),
    "blind63": (sixtythird, 24, 17),
    "blind64": (sixtyfourth, 24, 17),
    "blind65": (sixtyfifth, 24, 17),
    "blind66": (sixtysixth, 24, 17),
    "blind67": (sixtyseventh, 24, 17),
}
"""Each split's suite module, the least number of healthy programs and of harmful bugs it declares."""
EARLIER = {name: [split for split, _, _ in list(SPLITS.values())[:k]] for k, name in enumerate(SPLITS)}
"""Each split's earlier splits, in the order written (SPLITS' order): its scripts and mistakes are kept apart from
theirs. Two splits written side by side are checked against each other too, the later against the earlier."""
HEALTHY = {"blind": "blind_mlp_sgd_momentum", "blind2": "blind2_gru_seq2seq_teacher_forcing",
           "blind3": "blind3_mdn_inverse_problem", "blind4": "blind4_hypernet_sine_tasks",
           "blind5": "blind5_fakequant_mlp_lion", "blind6": "blind6_segmentation_ce_dice",
           "blind7": "blind7_cox_survival_adam", "blind8": "blind8_deep_svdd_adam", "blind9": "blind9_protonet_5way_adam",
           "blind10": "blind10_neural_tpp_softplus_adam", "blind11": "blind11_tabnet_sparsemax_adam",
           "blind12": "blind12_tarnet_effects_adam", "blind13": "blind13_hnn_pendulum_adam",
           "blind14": "blind14_cloning_gaussian_adam", "blind15": "blind15_imputer_dae_adam",
           "blind16": "blind16_houses_tanh_mlp_momentum",
           "blind17": "blind17_oblivious_nadam_depth3", "blind18": "blind18_crop_adagrad",
           "blind19": "blind19_intrusion_nesterov_hidden64", "blind20": "blind20_solar_adamw",
           "blind21": "blind21_prices_adamw_batch1024", "blind22": "blind22_enose_momentum_hidden32",
           "blind23": "blind23_turbine_adamax_batch256", "blind24": "blind24_fuel_radam_batch256",
           "blind25": "blind25_parking_momentum_warmup",
           "blind26": "blind26_wifi_momentum_accumulated",
           "blind27": "blind27_wine_adamax_batch64",
           "blind28": "blind28_eta_nadam_batch32",
           "blind29": "blind29_flares_radam_hidden32",
           "blind30": "blind30_fetal_radam_hidden128",
           "blind31": "blind31_ships_nadam_batch32",
           "blind32": "blind32_precipitation_adagrad_batch128",
           "blind33": "blind33_roads_rmsprop_hidden128",
           "blind34": "blind34_floods_nadam_batch64",
           "blind35": "blind35_etch_nadam_batch32",
           "blind36": "blind36_concrete_nadam_hidden128",
           "blind37": "blind37_moulding_nadam_batch32",
           "blind38": "blind38_hull_radam_batch32",
           "blind39": "blind39_surge_adagrad_batch256",
           "blind40": "blind40_lake_adamw_hidden32",
           "blind41": "blind41_smoke_adagrad_batch256",
           "blind42": "blind42_frost_adagrad_batch256",
           "blind43": "blind43_pollen_adagrad_batch128",
           "blind44": "blind44_snow_adagrad_batch256",
           "blind45": "blind45_street_adagrad_batch128",
           "blind46": "blind46_pool_adagrad_batch128",
           "blind47": "blind47_kiln_adamax_batch32",
           "blind48": "blind48_pulp_rmsprop_batch32",
           "blind49": "blind49_hay_rmsprop_hidden32",
           "blind50": "blind50_bus_adamax_batch32",
           "blind51": "blind51_sludge_adagrad_batch128",
           "blind52": "blind52_proof_adagrad_batch128",
           "blind53": "blind53_cave_adagrad_batch128",
           "blind54": "blind54_kidney_adagrad_batch32",
           "blind55": "blind55_fixture_adamax_batch128",
           "blind56": "blind56_dyebath_radam_batch32",
           "blind57": "blind57_joints_radam_batch32",
           "blind58": "blind58_stress_adagrad_batch128",
           "blind59": "blind59_fitting_radam_batch64",
           "blind60": "blind60_shots_nadam_batch128",
           "blind61": "blind61_mews_adamax_batch64",
           "blind62": "blind62_queue_nadam_batch64",
           "blind63": "blind63_granule_adagrad_batch64",
           "blind64": "blind64_crossing_radam_batch64",
           "blind65": "blind65_blend_adagrad_batch64",
           "blind66": "blind66_squat_adagrad_batch64",
           "blind67": "blind67_varnish_radam_batch64"}  # fmt: skip
"""A healthy program of each split, run a few steps through the real hook."""
HARMFUL = {"blind2": "blind2_Y12_normalised_with_stats_1000x_off",
           "blind3": "blind3_Z05_mixture_weights_normalised_over_batch",
           "blind4": "blind4_W15_generated_weights_detached",
           "blind5": "blind5_V19_fakequant_without_straight_through",
           "blind6": "blind6_U14_negatives_labelled_positive",
           "blind7": "blind7_T13_seen_and_unseen_swapped",
           "blind8": "blind8_P18_lookahead_interpolation_backwards",
           "blind9": "blind9_Q06_distances_not_negated",
           "blind10": "blind10_R10_intensity_without_softplus",
           "blind11": "blind11_S04_mask_softmax_over_frequency",
           "blind12": "blind12_K16_claim_free_rows_dropped",
           "blind13": "blind13_J20_chosen_and_rejected_swapped",
           "blind14": "blind14_H17_goal_not_in_observation",
           "blind15": "blind15_G09_changes_standardised_by_state_stats",
           "blind16": "blind16_F19_area_and_year_fed_raw",
           "blind17": "blind17_E12_loss_rewrapped_as_new_tensor",
           "blind18": "blind18_D03_optimizer_bound_to_discarded_model",
           "blind19": "blind19_C11_rate_over_zero_duration",
           "blind20": "blind20_B04_sst_fed_in_kelvin",
           "blind21": "blind21_A15_log_units_without_one",
           "blind22": "blind22_M09_baseline_from_unheated_first_reading",
           "blind23": "blind23_L11_shift_rolled_over_batch_axis",
           "blind24": "blind24_X11_idle_segments_per_distance",
           "blind25": "blind25_X10_additive_logged_without_one",
           "blind26": "blind26_W14_log_of_up_down_times",
           "blind27": "blind27_V15_goals_per_match_over_zero_played",
           "blind28": "blind28_U06_rogers_ratio_unguarded",
           "blind29": "blind29_T16_unmeasured_lactate_left_as_nan",
           "blind30": "blind30_R15_empty_recipe_row_divided_by_its_norm",
           "blind31": "blind31_Q13_assay_units_mixed_nm_and_um",
           "blind32": "blind32_P05_log_of_noisy_kdp",
           "blind33": "blind33_N15_decibel_target_left_uncentred",
           "blind34": "blind34_K07_rain_volume_in_half_precision",
           "blind35": "blind35_J05_o2_to_cf4_ratio_over_argon_recipes",
           "blind36": "blind36_H19_log_of_zero_slag_and_ash",
           "blind37": "blind37_G06_snow_density_over_snow_free_days",
           "blind38": "blind38_F16_drift_per_metre_over_full_tosses",
           "blind39": "blind39_E16_log_of_surge_premium",
           "blind40": "blind40_D10_cloud_masked_pixels_kept_for_index",
           "blind41": "blind41_C16_growth_over_closed_weeks",
           "blind42": "blind42_B17_shear_exponent_over_calm_nights",
           "blind43": "blind43_A04_days_since_rain_ffill_leading_gap",
           "blind44": "blind44_M11_cohesiveness_over_missed_first_bite",
           "blind45": "blind45_L10_failed_injections_kept",
           "blind46": "blind46_K01_cooling_rate_over_single_evening_reading",
           "blind47": "blind47_J09_log_of_core_over_ambient_excess",
           "blind48": "blind48_N17_dilution_ratio_over_tripped_pump",
           "blind49": "blind49_S07_empty_chamber_calibration_rows_kept",
           "blind50": "blind50_Y11_headway_over_gap_with_bunched_buses",
           "blind51": "blind51_Z18_rev_rate_over_missed_sensor_gap",
           "blind52": "blind52_I13_band_power_squared_in_half",
           "blind53": "blind53_O05_boxcox_negative_lambda_over_empty_hours",
           "blind54": "blind54_E01_peukert_on_signed_current",
           "blind55": "blind55_T16_chromaticity_of_blackout_rows",
           "blind56": "blind56_H10_cube_root_of_negative_xyz",
           "blind57": "blind57_Y04_log_ratio_of_undetected_assay",
           "blind58": "blind58_R04_log_vpd_of_supersaturated_humidity",
           "blind59": "blind59_U09_penetration_as_mean_of_sample_ratios",
           "blind60": "blind60_V10_log_ratios_of_unreported_traces",
           "blind61": "blind61_W06_unity_over_fluxes_missing_from_materials",
           "blind62": "blind62_G17_stefan_root_of_thaw_days",
           "blind63": "blind63_F14_dynamic_factor_over_slack_line_start",
           "blind64": "blind64_P13_dilution_over_drained_rinse",
           "blind65": "blind65_Q17_log_tf_over_tr_of_green_lots",
           "blind66": "blind66_X11_wind_off_tare_records_kept",
           "blind67": "blind67_K01_days_of_cover_over_undispensed_items"}  # fmt: skip
"""A bug of a later split that hurts from its first step, labelled against its twin by the oracle."""
BUGS = [(name, p) for name, (split, _, _) in SPLITS.items() for p in split.catalogue() if p.fault is not None]


@pytest.mark.parametrize("name", SPLITS)
def test_split_has_enough_unique_programs_and_none_of_the_earlier_splits(name: str) -> None:
    split, least_healthy, least_harmful = SPLITS[name]
    programs = split.catalogue()
    bugs = [p for p in programs if p.fault is not None]
    assert len({p.name for p in programs}) == len(programs)
    assert all(p.name.startswith(split.PREFIX) for p in programs)
    assert len(programs) - len(bugs) >= least_healthy
    assert len([p for p in bugs if p.should_stop]) >= least_harmful
    assert len({p.fault for p in bugs}) == len(bugs)
    for earlier in EARLIER[name]:
        assert not set(split.SCRIPTS.values()) & set(earlier.SCRIPTS.values())
        assert not {p.bug for p in bugs} & {p.bug for p in earlier.catalogue()}


@pytest.mark.parametrize("name", SPLITS)
def test_healthy_programs_carry_no_fault_labels(name: str) -> None:
    split = SPLITS[name][0]
    for p in split.catalogue():
        if p.fault is None:
            assert (p.bug, p.category, p.twin, p.effect_step) == (None, None, None, None), p.name
            assert p.brief and p.workload in split.SCRIPTS, p.name


@pytest.mark.parametrize(("name", "bug"), BUGS, ids=[p.name for _, p in BUGS])
def test_each_bug_is_labelled_against_a_healthy_twin(name: str, bug: first.BlindProgram) -> None:
    split: ModuleType = SPLITS[name][0]
    twin = {p.name: p for p in split.catalogue()}[bug.twin or ""]
    assert twin.fault is None
    assert (bug.workload, bug.knobs, bug.steps) == (twin.workload, twin.knobs, twin.steps)
    assert bug.category in split.CATEGORIES
    assert bug.effect_step is None or 0 <= bug.effect_step < bug.steps
    assert bug.brief and bug.should_stop != bug.hard_negative
    assert not bug.intended_rules  # written without knowing the rules
    # the script really switches on this bug (a typo would leave the twin's behaviour unchanged)
    assert f'"{bug.bug}"' in inspect.getsource(inspect.getmodule(split.SCRIPTS[bug.workload]))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", SPLITS)
def test_runner_offers_the_split_with_its_own_figures_file(name: str) -> None:
    split = SPLITS[name][0]
    assert [p.name for p in run.suite_programs(name)] == [p.name for p in split.catalogue()]
    assert run.RESULTS_SUFFIX[name] == "_" + name
    assert [split.split_of(s) for s in range(4)] == ["calibration", "report", "calibration", "report"]


@pytest.mark.parametrize("name", SPLITS)
def test_a_healthy_program_runs_through_the_hook(name: str, tmp_path: Path) -> None:
    split = SPLITS[name][0]
    prog = {p.name: p for p in split.catalogue()}[HEALTHY[name]]
    out = f"file://{tmp_path}/run"
    truth = split.train(replace(prog, steps=12), 0, out=out)
    assert len(truth.losses) == 12 and all(math.isfinite(x) for x in truth.losses)
    assert saved_steps(out) == 2  # steps 0 and 10 at save_interval 10
    assert not truth.diverged and truth.program == prog.name


@pytest.mark.parametrize("name", HARMFUL)
def test_oracle_labels_a_harmful_bug_against_its_twin(name: str) -> None:
    split = SPLITS[name][0]
    by_name = {p.name: p for p in split.catalogue()}
    bug = by_name[HARMFUL[name]]
    truths = [split.train(p, seed, out=None) for p in (bug, by_name[bug.twin or ""]) for seed in (0, 1)]
    split.label(truths, [bug, by_name[bug.twin or ""]])
    bug_runs = [t for t in truths if t.program == bug.name]
    assert all(t.should_stop and t.inject_step == 0 for t in bug_runs)
    assert [split.split_of(t.seed) for t in bug_runs] == ["calibration", "report"]
