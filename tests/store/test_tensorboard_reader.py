"""TensorBoard log directories read through `open_run`: scalars by mode, incremental reading, damage.

The fixture under tests/fixtures/tensorboard/ was written by `torch.utils.tensorboard.SummaryWriter`
(tests/fixtures/make_tensorboard_fixture.py), which also recorded the values it logged; the values
are checked against those and against TensorBoard's own EventAccumulator.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.util import tensor_util
from torch.utils.tensorboard import SummaryWriter

import trainguard
from trainguard.api.enums import Mode
from trainguard.store.backends import open_store
from trainguard.store.foreign import tensorboard, tfevent, tfrecord

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LOGS = FIXTURES / "tensorboard" / "logs"
EXPECTED = json.loads((FIXTURES / "tensorboard" / "logs.expected.json").read_text())


def _values(points: list[list[Any]]) -> list[float]:
    return [math.nan if v is None else v for _, v in points]


def test_scalars_come_back_by_mode_with_the_values_the_writer_logged() -> None:
    run = trainguard.open_run(str(LOGS))
    assert (run.format, run.ranks) == ("tensorboard", [0])
    assert run.info is not None and run.info.framework == "tensorboard" and run.info.start_time > 0
    for mode, series in EXPECTED["scalars"].items():
        assert sorted(run.scalar_names(mode=mode)) == sorted(series)
        for tag, points in series.items():
            steps, values = run.scalars(tag, mode=mode)
            assert steps.tolist() == [s for s, _ in points], (mode, tag)
            np.testing.assert_allclose(
                values, _values(points), rtol=1e-7, equal_nan=True, err_msg=f"{mode} {tag}"
            )
    assert np.isnan(run.scalars("loss").values[EXPECTED["nan_step"]])
    assert "fc.weight" not in run.scalar_names()  # histograms are not read
    assert run.steps().tolist() == list(range(8)) and run.last_step() == 7
    assert run.ended() is None and run.problems == []


def test_scalars_equal_what_tensorboards_own_reader_loads() -> None:
    run = trainguard.open_run(str(LOGS))
    for directory, key in ((LOGS, "events.out.tfevents.x"), (LOGS / "eval", "eval/events.out.tfevents.x")):
        acc = event_accumulator.EventAccumulator(str(directory), size_guidance={"scalars": 0, "tensors": 0})
        acc.Reload()
        assert acc.Tags()["scalars"]
        for tag in acc.Tags()["scalars"]:
            theirs = acc.Scalars(tag)
            name, mode = tensorboard.scalar_name_and_mode(key, tag)
            ours = run.scalars(name, mode=mode.value)
            assert ours.steps.tolist() == [e.step for e in theirs]
            np.testing.assert_array_equal(ours.values, [e.value for e in theirs])
        for tag in acc.Tags()["tensors"]:
            if tag == "lr":  # the new-style (tensor-encoded) scalar
                theirs_t = acc.Tensors(tag)
                np.testing.assert_array_equal(
                    run.scalars("lr").values,
                    [float(tensor_util.make_ndarray(e.tensor_proto)) for e in theirs_t],
                )


def test_event_files_carry_a_file_version_record_and_real_payload_crcs() -> None:
    for path in LOGS.rglob("*tfevents*"):
        records = list(tfrecord.iter_records(path.read_bytes()))
        assert {r.footer for r in records} == {"crc"}
        assert tfevent.decode_event(records[0].payload).file_version == "brain.Event:2"


@pytest.mark.parametrize(
    ("key", "tag", "name", "mode"),
    [
        ("events.out.tfevents.1", "loss", "loss", Mode.TRAIN),
        ("events.out.tfevents.1", "val_loss", "val_loss", Mode.EVAL),
        ("events.out.tfevents.1", "accuracy/test", "accuracy/test", Mode.EVAL),
        ("events.out.tfevents.1", "Loss/Validation", "Loss/Validation", Mode.EVAL),
        ("events.out.tfevents.1", "interval_ms", "interval_ms", Mode.TRAIN),
        ("eval/events.out.tfevents.1", "loss", "loss", Mode.EVAL),
        ("train/events.out.tfevents.1", "loss", "loss", Mode.TRAIN),
        ("run2/events.out.tfevents.1", "loss", "run2/loss", Mode.TRAIN),
        ("run2/val/events.out.tfevents.1", "acc", "run2/acc", Mode.EVAL),
        ("tensorboard/EVAL/000000000006_1_vm.tfevents", "scalar/lr", "tensorboard/scalar/lr", Mode.EVAL),
    ],
)
def test_tags_and_directories_map_to_names_and_modes(key: str, tag: str, name: str, mode: Mode) -> None:
    assert tensorboard.scalar_name_and_mode(key, tag) == (name, mode)


def test_smdebugs_tensorboard_export_is_read_with_its_train_and_eval_directories() -> None:
    run = trainguard.open_run(str(FIXTURES / "smdebug" / "mlp" / "tensorboard"))
    expected = json.loads((FIXTURES / "smdebug" / "mlp.expected.json").read_text())
    train = [s for s in expected["steps"] if s["mode"] == "TRAIN"]
    loss = run.scalars("CrossEntropyLoss_output_0", mode="train")
    assert loss.steps.tolist() == [s["step"] for s in train]
    np.testing.assert_allclose(loss.values, [s["loss"] for s in train], rtol=1e-6, equal_nan=True)
    assert run.scalars("CrossEntropyLoss_output_0", mode="eval").steps.tolist() == [6, 7]


def test_polling_a_growing_log_returns_each_scalar_once(tmp_path: Path) -> None:
    writer = SummaryWriter(log_dir=str(tmp_path))
    source = tensorboard.TensorBoardSource(open_store(str(tmp_path)))
    try:
        for step in range(3):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
        writer.flush()
        first = source.poll()
        assert [s.scalar_steps.tolist() for s in first] == [[0, 1, 2]]
        assert source.poll() == []
        for step in range(3, 5):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
            writer.add_scalar("val_loss", 2.0, step)
        writer.flush()
        second = source.poll()
        assert second[0].scalar_steps.tolist() == [3, 3, 4, 4]
        names = {t.id: (t.name, t.mode) for t in source.catalogue().values()}
        assert [names[int(i)] for i in second[0].scalar_ids] == [("loss", "train"), ("val_loss", "eval")] * 2
    finally:
        writer.close()
    assert source.problems == []


def test_a_record_cut_at_the_end_of_a_file_waits_for_the_rest(tmp_path: Path) -> None:
    shutil.copytree(LOGS, tmp_path / "logs")
    path = next((tmp_path / "logs").glob("events.out.tfevents.*"))
    extra = tfrecord.frame(_event_payload(step=100, tag="loss", value=0.125))
    with open(path, "ab") as f:
        f.write(extra[:10])
    source = tensorboard.TensorBoardSource(open_store(str(tmp_path / "logs")))
    first = source.poll()
    assert 100 not in np.concatenate([s.scalar_steps for s in first]).tolist()
    with open(path, "ab") as f:
        f.write(extra[10:])
    second = source.poll()
    assert second[0].scalar_steps.tolist() == [100] and second[0].scalar_values.tolist() == [0.125]
    assert source.problems == []


def test_damaged_records_are_reported_and_the_readable_rest_is_kept(tmp_path: Path) -> None:
    shutil.copytree(LOGS, tmp_path / "logs")
    main = next((tmp_path / "logs").glob("events.out.tfevents.*"))
    data = bytearray(main.read_bytes())
    records = list(tfrecord.iter_records(bytes(data)))
    data[records[1].offset + 14] ^= 0xFF  # a payload byte of the step-0 `loss` record: its CRC fails
    main.write_bytes(bytes(data))
    evaluation = next((tmp_path / "logs" / "eval").glob("events.out.tfevents.*"))
    data = bytearray(evaluation.read_bytes())
    eval_records = list(tfrecord.iter_records(bytes(data)))
    data[eval_records[1].offset] ^= (
        0x01  # the length of eval's first scalar record: the rest of that file is lost
    )
    evaluation.write_bytes(bytes(data))
    run = trainguard.open_run(str(tmp_path / "logs"))
    assert run.scalars("loss").steps.tolist() == list(
        range(1, 8)
    )  # step 0's record was skipped, the rest read
    assert "loss" not in run.scalar_names(mode="eval")
    assert len(run.problems) == 2
    assert any("payload CRC" in p and "next ones are read" in p for p in run.problems)
    assert any("length CRC" in p and "rest of this file" in p for p in run.problems)


def _event_payload(*, step: int, tag: str, value: float) -> bytes:
    """An Event{step, summary{value{tag, simple_value}}} encoded by hand, as the protobuf wire format lays it out."""
    import struct

    def field(number: int, wire: int, body: bytes) -> bytes:
        return _varint(number << 3 | wire) + (_varint(len(body)) + body if wire == 2 else body)

    value_msg = field(1, 2, tag.encode()) + field(2, 5, struct.pack("<f", value))
    return (
        field(1, 1, struct.pack("<d", 1.0)) + field(2, 0, _varint(step)) + field(5, 2, field(1, 2, value_msg))
    )


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def test_the_evaluator_finds_the_nan_loss_of_the_tensorboard_log(tmp_path: Path) -> None:
    from trainguard import cli

    report = tmp_path / "verdicts.json"
    assert cli.main(["evaluate", str(LOGS), "--json", str(report)]) == 1  # 1: issues found
    doc = json.loads(report.read_text())
    first = min((f for f in doc["findings"] if f["rule"] == "exploding_tensor"), key=lambda f: f["step"])
    assert first["step"] == EXPECTED["nan_step"]


def test_inspect_summarises_the_log_directory_as_one_rank_of_scalars(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from trainguard import cli

    assert cli.main(["inspect", str(LOGS), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["format"], doc["world_size"]) == ("tensorboard", 1)
    (rank,) = doc["ranks"]
    assert rank["scalars"] == {mode: sorted(series) for mode, series in EXPECTED["scalars"].items()}
    assert rank["steps"] == {"count": 8, "first": 0, "last": 7}
    assert rank["tensors"] == [] and rank["ended"] is None and rank["problems"] == []


def test_a_log_directory_on_s3_reads_the_same_as_on_disk(run_uri: str) -> None:
    store = open_store(run_uri)
    for path in sorted(LOGS.rglob("*")):
        if path.is_file():
            store.put(path.relative_to(LOGS).as_posix(), path.read_bytes())
    remote, local = trainguard.open_run(run_uri), trainguard.open_run(str(LOGS))
    assert remote.format == "tensorboard"
    for mode in ("train", "eval"):
        assert remote.scalar_names(mode=mode) == local.scalar_names(mode=mode)
        for name in local.scalar_names(mode=mode):
            np.testing.assert_array_equal(
                remote.scalars(name, mode=mode).values, local.scalars(name, mode=mode).values
            )
