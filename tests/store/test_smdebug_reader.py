"""smdebug output read through `open_run`: framing, decoding, statistics on read, modes, reductions, following.

The fixtures under tests/fixtures/smdebug/ were written by smdebug 1.0.34 itself (its PyTorch hook
and its FileWriter; tests/fixtures/make_smdebug_fixture.py). The expected numbers come from the
training script's own torch tensors and from smdebug's trial API, both recorded with the fixture.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as tensorflow_masked_crc32c

import trainguard
from trainguard.store import run_format, stats
from trainguard.store.backends import open_store
from trainguard.store.foreign import smdebug, smdebug_files, tfrecord

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "smdebug"
MLP = json.loads((FIXTURES / "mlp.expected.json").read_text())
DTYPES = json.loads((FIXTURES / "dtypes.expected.json").read_text())
PARAMS = ["Sequential_0.weight", "Sequential_0.bias", "Sequential_2.weight", "Sequential_2.bias"]
TRAIN_STEPS = [s for s in MLP["steps"] if s["mode"] == "TRAIN"]


def _array(name: str, record: dict[str, Any], key: str) -> np.ndarray:
    return np.asarray(record[key][name], np.float32).reshape(MLP["shapes"][name])


def _expected_rows(name: str, key: str) -> np.ndarray:
    """Tier-0 rows of one tensor over the train steps, from the values the training script saw."""
    rows, prev, first = [], None, None
    for record in TRAIN_STEPS:
        x = _array(name, record, key)
        if key == "params":
            first = x if first is None else first
            rows.append(stats.tier0(x, prev=prev, first=first))
            prev = x
        else:
            rows.append(stats.tier0(x))
    return np.stack(rows)


def _copy(src: Path, dst: Path, *, only: str | None = None) -> None:
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src).as_posix()
        if path.is_file() and (only is None or rel.startswith(only)):
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dst / rel)


# --- framing ------------------------------------------------------------------------------------
def test_crc32c_matches_tensorflow_on_the_check_value_and_random_data() -> None:
    assert tfrecord.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 8, 9, 63, 64, 65, 1000):
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert tfrecord.masked_crc32c(data) == tensorflow_masked_crc32c(data), n


def test_framing_accepts_smdebugs_constant_footer_and_real_payload_crcs() -> None:
    real = tfrecord.read_record(tfrecord.frame(b"payload"))
    constant = tfrecord.read_record(tfrecord.frame(b"payload", smdebug_footer=True))
    assert (bytes(real.payload), real.footer) == (b"payload", "crc")
    assert (bytes(constant.payload), constant.footer) == (b"payload", "smdebug")
    hook_file = (FIXTURES / "mlp/events/000000000000/000000000000_worker_0.tfevents").read_bytes()
    checksummed = (FIXTURES / "dtypes/events/000000000000/000000000000_worker_1.tfevents").read_bytes()
    assert {r.footer for r in tfrecord.iter_records(hook_file)} == {"smdebug"}
    assert {r.footer for r in tfrecord.iter_records(checksummed)} == {"crc"}


def test_framing_tells_a_damaged_payload_from_a_damaged_length_and_a_cut_record() -> None:
    data = bytearray(tfrecord.frame(b"first record") + tfrecord.frame(b"second"))
    data[14] ^= 0xFF  # inside the first payload: the length is intact, so the next record can be found
    with pytest.raises(tfrecord.RecordError) as bad_payload:
        tfrecord.read_record(bytes(data))
    assert bad_payload.value.next_offset == 16 + len(b"first record")
    assert bytes(tfrecord.read_record(bytes(data), bad_payload.value.next_offset).payload) == b"second"
    data[0] ^= 0x01  # the length itself
    with pytest.raises(tfrecord.RecordError) as bad_length:
        tfrecord.read_record(bytes(data))
    assert bad_length.value.next_offset is None and not bad_length.value.truncated
    with pytest.raises(tfrecord.RecordError) as cut:
        tfrecord.read_record(tfrecord.frame(b"first record")[:-3])
    assert cut.value.truncated


# --- the hook's run -------------------------------------------------------------------------------
def test_a_hook_run_opens_with_its_worker_as_rank_0_its_train_steps_and_our_names() -> None:
    run = trainguard.open_run(str(FIXTURES / "mlp"))
    assert (run.format, run.ranks) == ("smdebug", [0])
    assert run.info is not None and run.info.framework == "smdebug" and run.info.world_size == 1
    assert run.steps().tolist() == [s["step"] for s in TRAIN_STEPS]
    coll = run.collections()
    assert sorted(coll["weights"]) == ["Sequential_0.weight", "Sequential_2.weight"]
    assert sorted(coll["biases"]) == ["Sequential_0.bias", "Sequential_2.bias"]
    assert sorted(coll["gradients"]) == sorted(f"grad/{p}" for p in PARAMS)
    by_name = {t.name: t for t in run.tensors() if not t.is_scalar}
    assert by_name["Sequential_0.weight"].shape == [8, 4] and by_name["Sequential_0.weight"].trainable
    assert by_name["Sequential_0.weight"].module == "Sequential_0"
    assert not by_name["grad/Sequential_0.weight"].trainable
    assert run.ended() is not None and run.ended().last_step == MLP["steps"][-1]["step"]  # type: ignore[union-attr]
    assert run.problems == []


@pytest.mark.parametrize("name", PARAMS)
def test_statistics_computed_on_read_match_numpy_on_the_values_the_script_saw(name: str) -> None:
    run = trainguard.open_run(str(FIXTURES / "mlp"))
    for tensor, key in ((name, "params"), (f"grad/{name}", "grads")):
        want = _expected_rows(name, key)
        for k, column in enumerate(run_format.STAT_COLUMNS):
            steps, got = run.series(tensor, column)
            assert steps.tolist() == [s["step"] for s in TRAIN_STEPS]
            np.testing.assert_allclose(
                got, want[:, k], rtol=1e-6, atol=1e-7, equal_nan=True, err_msg=f"{tensor} {column}"
            )
    # The update columns exist for parameters only, from consecutive raw values.
    assert np.isfinite(run.series(name, "update_l2").values[1:3]).all()
    assert np.isnan(run.series(f"grad/{name}", "update_l2").values).all()


def test_the_injected_nan_appears_in_the_nan_column_at_its_step() -> None:
    run = trainguard.open_run(str(FIXTURES / "mlp"))
    steps, nans = run.series("Sequential_0.weight", "nan")
    assert steps[np.nonzero(nans)[0][0]] == MLP["nan_step"]
    assert nans[steps.tolist().index(MLP["nan_step"])] == 1  # exactly the one element written
    _, grad_nans = run.series("grad/Sequential_0.weight", "nan")
    assert (grad_nans[: MLP["nan_step"]] == 0).all() and grad_nans[MLP["nan_step"]] > 0


def test_losses_become_scalars_in_the_mode_smdebug_recorded() -> None:
    run = trainguard.open_run(str(FIXTURES / "mlp"))
    train = run.scalars("CrossEntropyLoss_output_0", mode="train")
    evaluation = run.scalars("CrossEntropyLoss_output_0", mode="eval")
    assert train.steps.tolist() == [s["step"] for s in TRAIN_STEPS]
    assert evaluation.steps.tolist() == [s["step"] for s in MLP["steps"] if s["mode"] == "EVAL"]
    want = [s["loss"] for s in MLP["steps"]]
    got = np.concatenate([train.values, evaluation.values])
    np.testing.assert_allclose(got, np.asarray(want, np.float32), rtol=1e-6, equal_nan=True)
    assert {t.collection for t in run.tensors() if t.name == "CrossEntropyLoss_output_0"} == {"losses"}
    lr = run.scalars("lr")  # hook.save_scalar("lr", ...) is stored as `scalar/lr`
    assert set(lr.values.tolist()) == {0.1}
    assert "lr" in run.scalar_names(mode="train") and "lr" in run.scalar_names(mode="eval")


def test_decoded_values_equal_what_smdebugs_trial_reads() -> None:
    store = open_store(str(FIXTURES / "mlp"))
    trial = MLP["trial"]["mlp"]["worker_0"]
    seen = 0
    for key in store.list("index/"):
        read = smdebug_files.read_step(store, key)
        assert read.problems == []
        for v in read.values:
            want = trial[v.name][str(read.step)]
            assert v.values is not None and str(v.values.dtype) == want["dtype"]
            np.testing.assert_array_equal(v.values.astype(np.float64).ravel(), np.asarray(want["values"]))
            seen += 1
    assert seen == sum(len(steps) for steps in trial.values())


def test_reductions_fold_back_under_their_base_tensor() -> None:
    """A run saved with `save_raw_tensor=False`: the columns come from smdebug's stored reductions."""
    run = trainguard.open_run(str(FIXTURES / "reductions"))
    trial = MLP["trial"]["reductions"]["worker_0"]
    assert not any(t.name.startswith("smdebug/") for t in run.tensors())
    for name in PARAMS:
        for tensor, smd_name, key in ((name, name, "params"), (f"grad/{name}", f"gradient/{name}", "grads")):
            steps = run.steps()
            for column, reduction in (
                ("min", "min"),
                ("max", "max"),
                ("mean", "mean"),
                ("abs_mean", "abs_mean"),
                ("l2", "l2"),
            ):
                want = [trial[smd_name][str(s)]["reductions"][reduction] for s in steps]
                np.testing.assert_allclose(run.series(tensor, column).values, want, rtol=1e-6, equal_nan=True)
            # torch.Tensor.var is Bessel-corrected; our std is the population one.
            n = int(np.prod(MLP["shapes"][name]))
            variance = np.asarray([trial[smd_name][str(s)]["reductions"]["variance"] for s in steps])
            np.testing.assert_allclose(
                run.series(tensor, "std").values, np.sqrt(variance * (n - 1) / n), rtol=1e-5, equal_nan=True
            )
            # The same numbers as numpy on the raw values (hook-side torch reductions are flattened).
            want_rows = _expected_rows(name, key)
            for column in ("min", "max", "mean", "std", "abs_mean", "l2"):
                got = run.series(tensor, column).values
                np.testing.assert_allclose(
                    got, want_rows[:, run_format.COLUMN[column]], rtol=1e-4, atol=1e-6, equal_nan=True
                )
            assert (
                run.series(tensor, "count").values == np.prod(MLP["shapes"][name])
            ).all()  # from save_shape
            assert np.isnan(run.series(tensor, "nan").values).all()  # unknown from reductions, not 0


# --- dtypes, workers, real CRCs --------------------------------------------------------------------
def test_every_dtype_decodes_to_the_values_written_on_both_workers() -> None:
    store = open_store(str(FIXTURES / "dtypes"))
    for key in store.list("index/"):
        read = smdebug_files.read_step(store, key)
        assert read.problems == []
        want = DTYPES["workers"][read.worker][str(read.step)]
        got = {v.name: v for v in read.values}
        assert set(got) == set(want)
        for name, w in want.items():
            if name.startswith("scalar/"):
                assert got[name].simple_value and float(got[name].values) == pytest.approx(w)  # type: ignore[arg-type]
                continue
            assert got[name].dtype == w["dtype"], name
            assert got[name].values is not None and list(got[name].values.shape) == w["shape"]
            np.testing.assert_array_equal(
                got[name].values.astype(np.float64).ravel(), w["values"], err_msg=name
            )


def test_int8_is_signed_where_smdebugs_own_reader_says_uint8() -> None:
    store = open_store(str(FIXTURES / "dtypes"))
    read = smdebug_files.read_step(store, "index/000000000/000000000000_worker_0.json")
    ours = next(v.values for v in read.values if v.name == "int8/t")
    assert ours is not None and ours.dtype == np.int8 and ours.min() == -128
    theirs = DTYPES["trial"]["worker_0"]["int8/t"]["0"]
    assert theirs["dtype"] == "uint8"
    assert ours.ravel().view(np.uint8).tolist() == theirs["values"]  # same bytes, wrong sign in smdebug
    bf16 = next(v for v in read.values if v.name == "bf16/t")
    assert bf16.dtype == "bfloat16" and bf16.values is not None and bf16.values.dtype == np.float32
    assert "error" in DTYPES["trial"]["worker_1"]["int8/t"]["0"]  # smdebug cannot read its own real-CRC files


def test_workers_become_ranks_and_their_statistics_come_from_the_signed_values() -> None:
    run = trainguard.open_run(str(FIXTURES / "dtypes"))
    assert run.ranks == [0, 1] and run.info is not None and run.info.world_size == 2
    for rank, worker in enumerate(["worker_0", "worker_1"]):
        assert run.steps(rank=rank).tolist() == [0, 1]
        for name in ("int8/t", "bf16/t", "half/t", "int64/t", "bool/t"):
            want = DTYPES["workers"][worker]["0"][name]
            row = stats.tier0(np.asarray(want["values"]))
            got = [run.series(name, c, rank=rank).values[0] for c in run_format.STAT_COLUMNS]
            np.testing.assert_allclose(got, row, rtol=1e-6, equal_nan=True, err_msg=f"{worker} {name}")
        assert run.scalars("accuracy", rank=rank).values.tolist() == [0.5, 0.75]
    assert run.problems == []


# --- damage -------------------------------------------------------------------------------------
def test_a_record_with_a_damaged_length_is_reported_and_the_rest_of_the_run_is_read(tmp_path: Path) -> None:
    _copy(FIXTURES / "mlp", tmp_path)
    index = json.loads((tmp_path / "index/000000000/000000000002_worker_0.json").read_text())
    loc = next(t for t in index["tensor_payload"] if t["tensorname"] == "Sequential_2.weight")
    event_file = tmp_path / index["meta"]["event_file_name"]
    data = bytearray(event_file.read_bytes())
    data[loc["start_idx"]] ^= 0x40
    event_file.write_bytes(bytes(data))
    run = trainguard.open_run(str(tmp_path))
    steps, _ = run.series("Sequential_2.weight", "l2")
    assert 2 not in steps.tolist()
    assert run.series("Sequential_0.weight", "l2").steps.tolist() == [s["step"] for s in TRAIN_STEPS]
    assert len(run.problems) == 1
    assert (
        "Sequential_2.weight" in run.problems[0]
        and "length CRC" in run.problems[0]
        and "skipped" in run.problems[0]
    )


def test_a_damaged_payload_under_a_real_crc_and_a_missing_event_file_are_reported(tmp_path: Path) -> None:
    _copy(FIXTURES / "dtypes", tmp_path)
    event_file = tmp_path / "events/000000000000/000000000000_worker_1.tfevents"
    data = bytearray(event_file.read_bytes())
    data[20] ^= 0xFF  # inside the first record's payload (int8/t)
    event_file.write_bytes(bytes(data))
    os.remove(tmp_path / "events/000000000001/000000000001_worker_1.tfevents")
    run = trainguard.open_run(str(tmp_path))
    assert run.steps(rank=1).tolist() == [0]
    assert "int8/t" not in [t.name for t in run.tensors(rank=1)]  # its only record on worker_1 was damaged
    assert run.series("half/t", "l2", rank=1).steps.tolist() == [0]
    assert any("payload CRC" in p and "int8/t" in p for p in run.problems)
    assert any("does not exist" in p and "step 1 of worker_1" in p for p in run.problems)


# --- following and storage ------------------------------------------------------------------------
def test_polling_returns_a_step_once_its_index_lands_and_never_rereads(
    tmp_path: Path, recording_store: Any
) -> None:
    _copy(FIXTURES / "mlp", tmp_path, only="events/")
    _copy(FIXTURES / "mlp", tmp_path, only="collections/")
    store = recording_store(open_store(str(tmp_path)))
    source = smdebug.SmdebugSource(store, rank=0, worker="worker_0")
    assert source.poll() == []  # event files without their index are not complete steps
    for step in (0, 1, 2):
        _copy(FIXTURES / "mlp", tmp_path, only=f"index/000000000/{step:012d}_")
    first = source.poll()
    assert [s.steps.tolist() for s in first] == [[0, 1, 2]]
    assert source.poll() == []
    assert source.ended() is None
    _copy(FIXTURES / "mlp", tmp_path)
    rest = source.poll()
    assert np.concatenate([s.steps for s in rest]).tolist() == [3, 4, 5]
    assert sorted(np.concatenate([s.scalar_steps for s in rest]).tolist()) == sorted(
        [3, 3, 4, 4, 5, 5, 6, 6, 7, 7]
    )
    assert source.ended() is not None and source.ended().last_step == 7  # type: ignore[union-attr]
    index_lists = [c for c in store.list_calls if c[0] == "index/"]
    assert (
        index_lists[-1][1] == "index/000000000/000000000002_worker_0.json"
    )  # listed after the last key seen


def test_follow_yields_every_train_step_then_ends_at_the_end_marker() -> None:
    run = trainguard.open_run(str(FIXTURES / "mlp"))
    follower = run.follow(poll_interval_seconds=0.01, idle_timeout_seconds=5)
    steps = [int(s) for seg in follower for s in seg.steps]
    assert steps == [s["step"] for s in TRAIN_STEPS] and follower.ended and not follower.timed_out


def test_the_reader_gives_the_same_numbers_over_s3_as_over_files(run_uri: str) -> None:
    store = open_store(run_uri)
    for path in sorted((FIXTURES / "mlp").rglob("*")):
        if path.is_file():
            store.put(path.relative_to(FIXTURES / "mlp").as_posix(), path.read_bytes())
    remote = trainguard.open_run(run_uri)
    local = trainguard.open_run(str(FIXTURES / "mlp"))
    assert remote.format == "smdebug" and remote.ranks == [0]
    for column in ("nan", "l2", "update_l2"):
        np.testing.assert_array_equal(
            remote.series("grad/Sequential_0.weight", column).values,
            local.series("grad/Sequential_0.weight", column).values,
        )
    np.testing.assert_array_equal(
        remote.scalars("CrossEntropyLoss_output_0").values, local.scalars("CrossEntropyLoss_output_0").values
    )
    assert remote.ended() is not None


def test_tensor_names_map_to_our_collections_without_a_collections_file() -> None:
    classifier = smdebug_files.Classifier(None)
    assert classifier.classify("gradient/fc1.weight", size=4) == smdebug_files.Naming(
        "grad/fc1.weight", trainguard.api.enums.Collection.GRADIENTS, False
    )
    assert classifier.classify("Net_fc1.bias", size=4).collection.value == "biases"
    assert classifier.classify("Net_fc1.weight", size=4).collection.value == "weights"
    assert classifier.classify("scalar/val_acc", size=1) == smdebug_files.Naming(
        "val_acc", trainguard.api.enums.Collection.METRICS, True
    )
    assert classifier.classify("CrossEntropyLoss_output_0", size=1).scalar
    assert not classifier.classify("CrossEntropyLoss_output_0", size=5).scalar
    assert smdebug_files.reduction_parts("smdebug/reductions/abs_mean/gradient/fc1.weight") == (
        "gradient/fc1.weight",
        "abs_mean",
    )
    assert smdebug_files.worker_ranks(["worker_1", "worker_0", "_replica-0_task-0_device-GPU-0"]) == {
        0: "worker_0",
        1: "worker_1",
        2: "_replica-0_task-0_device-GPU-0",
    }


def test_framing_written_here_reads_back_through_struct_layout() -> None:
    """The header is a little-endian uint64 length and its masked CRC, as TensorFlow lays it out."""
    framed = tfrecord.frame(b"abc")
    (length,) = struct.unpack_from("<Q", framed)
    assert length == 3 and len(framed) == tfrecord.FRAME_BYTES + 3
    assert struct.unpack_from("<I", framed, 8)[0] == tensorflow_masked_crc32c(framed[:8])


def test_the_evaluator_finds_the_injected_nan_on_the_smdebug_run_unchanged(tmp_path: Path) -> None:
    from trainguard import cli

    report = tmp_path / "verdicts.json"
    assert cli.main(["evaluate", str(FIXTURES / "mlp"), "--json", str(report)]) == 1  # 1: issues found
    doc = json.loads(report.read_text())
    first = min((f for f in doc["findings"] if f["rule"] == "exploding_tensor"), key=lambda f: f["step"])
    assert (first["step"], first["rank"]) == (MLP["nan_step"], 0)
    assert doc["rules"]["vanishing_gradient"]["state"] == "NoIssuesFound"


def test_tier1_histograms_are_taken_on_every_tenth_saved_train_step_like_the_hook() -> None:
    store = open_store(str(FIXTURES / "mlp"))
    source = smdebug.SmdebugSource(store, rank=0, worker="worker_0", tier1_interval_steps=4)
    (seg,) = source.poll()
    assert seg.tier1_steps.tolist() == [0, 4]
    ids = {t.name: t.id for t in source.catalogue().values() if not t.is_scalar}
    for i, record in enumerate(TRAIN_STEPS[0:5:4]):
        np.testing.assert_array_equal(
            seg.hists[ids["Sequential_2.weight"]][i],
            stats.log2_hist(_array("Sequential_2.weight", record, "params")),
        )
    default = trainguard.open_run(str(FIXTURES / "mlp")).segments()[0]
    assert default.tier1_steps.tolist() == [0]


def test_a_worker_that_has_not_written_yet_is_a_rank_from_the_declared_world_size(tmp_path: Path) -> None:
    _copy(FIXTURES / "dtypes", tmp_path, only="collections/000000000/worker_0")
    _copy(FIXTURES / "dtypes", tmp_path, only="events/")
    _copy(FIXTURES / "dtypes", tmp_path, only="index/000000000/000000000000_worker_0")
    run = trainguard.open_run(str(tmp_path))
    assert run.ranks == [0, 1]  # the collections file says num_workers 2
    source = run.source(1)
    assert source.poll() == []
    _copy(FIXTURES / "dtypes", tmp_path, only="index/")
    assert [seg.steps.tolist() for seg in source.poll()] == [[0, 1]]


def test_a_storage_failure_mid_poll_returns_the_steps_read_and_retries_the_failed_one(
    tmp_path: Path, recording_store: Any
) -> None:
    from trainguard.store import errors

    _copy(FIXTURES / "mlp", tmp_path)
    store = recording_store(open_store(str(tmp_path)))

    def fail() -> None:
        raise errors.StoreError("injected: the server went away after its retries")

    store.before_get("events/000000000002/000000000002_worker_0.tfevents", fail)
    source = smdebug.SmdebugSource(store, rank=0, worker="worker_0")
    assert [s.steps.tolist() for s in source.poll()] == [[0, 1]]
    assert np.concatenate([s.steps for s in source.poll()]).tolist() == [2, 3, 4, 5]
    assert source.problems == []


def test_inspect_summarises_the_smdebug_runs_ranks_collections_and_scalars(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from trainguard import cli

    assert cli.main(["inspect", str(FIXTURES / "mlp"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["format"], doc["framework"], doc["world_size"]) == ("smdebug", "smdebug", 1)
    (rank,) = doc["ranks"]
    assert rank["steps"] == {"count": 6, "first": 0, "last": 5} and rank["last_step"] == 7
    assert rank["collections"] == {"biases": 2, "gradients": 4, "weights": 2}
    assert rank["scalars"] == {
        "train": ["CrossEntropyLoss_output_0", "lr"],
        "eval": ["CrossEntropyLoss_output_0", "lr"],
    }
    assert rank["ended"]["status"] == "ok" and rank["problems"] == []
    assert cli.main(["inspect", str(FIXTURES / "dtypes"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["world_size"] == 2 and [r["rank"] for r in doc["ranks"]] == [0, 1]


def test_inspect_lists_a_damaged_smdebug_record_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainguard import cli

    _copy(FIXTURES / "mlp", tmp_path)
    event_file = tmp_path / "events/000000000001/000000000001_worker_0.tfevents"
    data = bytearray(event_file.read_bytes())
    data[0] ^= 0x40  # the length of the step's first record
    event_file.write_bytes(bytes(data))
    assert cli.main(["inspect", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert "Sequential_0.weight" in out.out and "length CRC" in out.out
    assert "\n" not in out.err.strip() and out.err.startswith("trainguard: error: 1 problem(s)")


def test_damaged_bytes_raise_only_the_readers_own_errors() -> None:
    """Random damage to real records: decoding fails with DecodeError/RecordError, never anything else."""
    from trainguard.store.foreign import tfevent

    files = sorted(FIXTURES.glob("*/events/*/*.tfevents"))
    payloads = [bytes(r.payload) for f in files for r in tfrecord.iter_records(f.read_bytes())]
    rng = np.random.default_rng(5)
    decode_errors = 0
    for _ in range(3000):
        p = bytearray(payloads[rng.integers(len(payloads))])
        for j in rng.integers(0, len(p), rng.integers(1, 5)):
            p[j] = int(rng.integers(256))
        if rng.random() < 0.3:
            p = p[: rng.integers(len(p))]
        try:
            tfevent.decode_event(bytes(p))
        except tfevent.DecodeError:
            decode_errors += 1
        try:
            tfrecord.read_record(tfrecord.frame(bytes(p))[: rng.integers(4, len(p) + 17)])
        except tfrecord.RecordError as err:
            assert err.truncated
    assert decode_errors > 500  # the damage was real


def test_a_tensor_whose_bytes_do_not_fit_its_dtype_or_shape_is_a_decode_error() -> None:
    from trainguard.store.foreign import tfevent

    with pytest.raises(tfevent.DecodeError, match="cannot be decoded"):
        tfevent.decode_tensor(b"\x08\x01\x22\x03abc")  # DT_FLOAT with 3 content bytes
    with pytest.raises(tfevent.DecodeError, match="expected 3"):
        tfevent.decode_tensor(b"\x08\x01\x12\x04\x12\x02\x08\x03\x22\x08" + bytes(8))  # shape [3], 2 floats
    filled = tfevent.decode_tensor(b"\x08\x01\x12\x04\x12\x02\x08\x03\x2a\x04" + struct.pack("<f", 2.5))
    assert filled.values is not None and filled.values.tolist() == [2.5, 2.5, 2.5]  # one listed value fills


def test_the_collections_file_decides_before_the_name_patterns() -> None:
    doc = smdebug_files.CollectionsDoc.model_validate(
        {
            "collections": {
                "all": {"include_regex": [".*"]},
                "feature_importance": {"include_regex": ["^feature_importance/"]},
                "my_relu_activations": {"tensor_names": ["Net_relu1_output_0"]},
                "optimizer_variables": {"tensor_names": ["Adam_exp_avg_weight"]},
            },
            "_meta": {"num_workers": 4},
        }
    )
    classifier = smdebug_files.Classifier(doc)
    assert doc.meta.num_workers == 4
    assert classifier.classify("feature_importance/gain/f3", size=1) == smdebug_files.Naming(
        "feature_importance/gain/f3", trainguard.api.enums.Collection.METRICS, True
    )
    assert classifier.classify("Net_relu1_output_0", size=8).collection.value == "activations"
    # By name alone this would be `weights`; the file says optimizer state.
    assert classifier.classify("Adam_exp_avg_weight", size=8).collection.value == "optimizer"


def test_a_step_is_not_missed_when_a_temporary_or_another_workers_index_sorts_after_it(
    tmp_path: Path,
) -> None:
    """smdebug writes `<index>.json.tmp` locally and renames it; workers finish the same step in any order."""
    _copy(FIXTURES / "mlp", tmp_path, only="events/")
    for step in (0, 1, 2):
        _copy(FIXTURES / "mlp", tmp_path, only=f"index/000000000/{step:012d}_")
    final = tmp_path / "index/000000000/000000000003_worker_0.json"
    tmp = final.with_name(final.name + ".tmp")
    tmp.write_bytes((FIXTURES / "mlp" / final.relative_to(tmp_path)).read_bytes())
    source = smdebug.SmdebugSource(open_store(str(tmp_path)), rank=0, worker="worker_0")
    assert [s.steps.tolist() for s in source.poll()] == [[0, 1, 2]]
    tmp.rename(final)
    assert [s.steps.tolist() for s in source.poll()] == [[3]]

    workers = tmp_path / "workers"
    _copy(FIXTURES / "dtypes", workers, only="events/")
    for name in ("000000000000_worker_0", "000000000000_worker_1", "000000000001_worker_1"):
        _copy(FIXTURES / "dtypes", workers, only=f"index/000000000/{name}")
    worker_0 = smdebug.SmdebugSource(open_store(str(workers)), rank=0, worker="worker_0")
    assert [s.steps.tolist() for s in worker_0.poll()] == [[0]]
    _copy(FIXTURES / "dtypes", workers, only="index/000000000/000000000001_worker_0")
    assert [s.steps.tolist() for s in worker_0.poll()] == [[1]]
