"""Readers that cannot be knocked over: damaged, hostile or odd objects in a run give one clear line each.

A real run is written by the `Recorder`, then one object is replaced: a segment holding a
decompression bomb or an array whose header declares a shape its bytes do not hold, scalar arrays
of different lengths, a `run.json` nested 100,000 levels deep, a FIFO, a symbolic link to
/dev/zero or out of the root. `trainguard inspect`, `evaluate` and `report` run as a user runs
them (a subprocess): no traceback, no hang, no memory taken for what a header merely claims, and
the later segments are still read. A root that also holds many unrelated objects is told apart
from a run in a few list requests.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import trainguard
from trainguard.store import backends, errors, run_format, runs
from trainguard.store.backends import open_store
from trainguard.store.backends.s3 import S3Store

MAX_RSS_BYTES = 600 * 2**20
"""A command that reads a bomb in full takes 2 GB and more; the interpreter with numpy, boto3 and the
reader takes about 150 MB (a wide margin for other builds of the same packages)."""


_PEAK_RSS_WRAPPER = """
import atexit, sys
from pathlib import Path
def peak() -> None:
    status = Path('/proc/self/status').read_text()
    Path(sys.argv[1]).write_text(status.split('VmHWM:')[1].split()[0])
atexit.register(peak)
from trainguard.cli import main
sys.exit(main(sys.argv[2:]))
"""
"""Runs the CLI and writes its own peak RSS (VmHWM, KiB: this process's memory since exec) to a file."""


def cli(*args: str, timeout_seconds: float = 120.0) -> tuple[int, str, str, int]:
    """Run `trainguard ARGS` as a user does; return (exit status, stdout, stderr, its peak RSS in bytes).

    A read that blocks (a FIFO) fails the test at the timeout instead of hanging it."""
    with tempfile.TemporaryDirectory() as tmp:
        peak = Path(tmp) / "peak"
        try:
            result = subprocess.run(
                [sys.executable, "-c", _PEAK_RSS_WRAPPER, str(peak), *args],
                capture_output=True,
                text=True,
                timeout=timeout_seconds,
                check=False,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"trainguard {' '.join(args)} did not finish in {timeout_seconds}s")
        rss = int(peak.read_text()) * 1024 if peak.exists() else 0
    return result.returncode, result.stdout, result.stderr, rss


def write_run(uri: str) -> list[str]:
    """Write 6 saved steps in 3 segments (steps 0-1, 2-3, 4-5) with a loss; return the segment keys."""
    with trainguard.Recorder(uri, save_interval=1, flush_every_steps=2, flush_interval_seconds=60) as rec:
        for step in range(6):
            rec.record_tensor("w", np.full(3, float(step)), collection="weights")
            rec.record_scalar("loss", 1.0 / (step + 1))
            rec.step()
    keys = open_store(uri).list("rank-00000/seg-")
    assert len(keys) == 3
    return keys


def arrays_of(data: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        return {name: npz[name] for name in npz.files}


def segment_bytes(arrays: dict[str, np.ndarray], *, raw: dict[str, bytes] | None = None) -> bytes:
    """A segment archive of `arrays` plus members given as raw .npy bytes (to forge headers)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, arr in arrays.items():
            with zf.open(name + ".npy", "w") as member:
                np.lib.format.write_array(member, arr, allow_pickle=False)
        for name, data in (raw or {}).items():
            zf.writestr(name + ".npy", data)
    return buf.getvalue()


def bomb_segment(arrays: dict[str, np.ndarray], *, unpacked_bytes: int) -> bytes:
    """A segment with one more member of `unpacked_bytes` zeros: megabytes stored, far more unpacked."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, arr in arrays.items():
            with zf.open(name + ".npy", "w") as member:
                np.lib.format.write_array(member, arr, allow_pickle=False)
        with zf.open("extra.bomb.npy", "w", force_zip64=True) as member:
            count = unpacked_bytes // 8
            np.lib.format.write_array_header_1_0(
                member, {"descr": "<f8", "fortran_order": False, "shape": (count,)}
            )
            chunk = bytes(2**24)
            for _ in range(count * 8 // len(chunk)):
                member.write(chunk)
            member.write(bytes(count * 8 % len(chunk)))
    return buf.getvalue()


def npy_header(shape: tuple[int, ...], descr: str = "<f8") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def assert_read_with_one_problem(uri: str, key: str, *fragments: str) -> str:
    """`inspect` reads the other segments, lists one problem naming `key`, exits 1 without a traceback."""
    code, out, err, _ = cli("inspect", uri)
    assert code == 1, (code, out, err)
    assert "Traceback" not in out + err
    assert "  steps        4 saved (first 0, last 5)" in out, out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trainguard: error: 1 problem(s) reading"), err
    assert key in lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# --- segments ----------------------------------------------------------------------------------------
def test_a_decompression_bomb_is_refused_before_it_is_unpacked(run_uri: str) -> None:
    keys = write_run(run_uri)
    store = open_store(run_uri)
    store.put(
        keys[1],
        bomb_segment(arrays_of(store.get(keys[1])), unpacked_bytes=run_format.MAX_SEGMENT_BYTES + 2**24),
    )
    assert len(store.get(keys[1])) < 2**23  # stored in a few megabytes
    code, _out, err, rss = cli("inspect", run_uri)
    assert code == 1 and "Traceback" not in err, err
    assert "more than the" in err and keys[1] in err
    assert rss < MAX_RSS_BYTES, f"inspect peaked at {rss / 2**20:.0f} MiB"


def test_a_declared_shape_that_its_member_does_not_hold_is_refused_without_allocating_it(
    run_uri: str,
) -> None:
    keys = write_run(run_uri)
    store = open_store(run_uri)
    arrays = arrays_of(store.get(keys[1]))
    store.put(keys[1], segment_bytes(arrays, raw={"extra.huge": npy_header((10**12,)) + bytes(64)}))
    line = assert_read_with_one_problem(run_uri, keys[1], "declares shape (1000000000000,)", "holds 64 bytes")
    assert "MemoryError" not in line


def test_scalar_arrays_of_different_lengths_are_a_damaged_segment_for_inspect_and_report(
    run_uri: str, tmp_path: Path
) -> None:
    keys = write_run(run_uri)
    store = open_store(run_uri)
    arrays = arrays_of(store.get(keys[1]))
    assert arrays["scalar_ids"].size == 2
    store.put(keys[1], segment_bytes({**arrays, "scalar_values": np.array([0.5])}))
    assert_read_with_one_problem(run_uri, keys[1], "scalar_values has shape (1,), expected 2 rows")
    code, _out, err, _ = cli("report", run_uri, "-o", str(tmp_path / "report.html"))
    assert code == 0 and "Traceback" not in err, err
    assert (tmp_path / "report.html").stat().st_size > 0


@pytest.mark.parametrize(
    "member, value, message",
    [
        ("wall_time", np.zeros(5), "wall_time has shape (5,), expected 2 rows"),
        ("steps", np.zeros((2, 1), np.int64), "steps has shape (2, 1), expected one dimension"),
    ],
)
def test_other_parallel_arrays_are_checked_too(member: str, value: np.ndarray, message: str) -> None:
    buf = io.BytesIO()
    seg = run_format.Segment(
        steps=np.array([1, 2], np.int64),
        wall_time=np.array([1.0, 2.0]),
        tensor_ids=np.array([0], np.int32),
        stats=np.zeros((2, 1, len(run_format.STAT_COLUMNS)), np.float32),
    )
    arrays = arrays_of(run_format.encode_segment(seg))
    buf.write(segment_bytes({**arrays, member: value}))
    with pytest.raises(errors.SegmentCorrupt, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_format.decode_segment(buf.getvalue(), key="k")


# --- documents --------------------------------------------------------------------------------------
def test_run_json_nested_100k_levels_deep_is_one_error_line(run_uri: str) -> None:
    write_run(run_uri)
    open_store(run_uri).put("run.json", b"[" * 100_000)
    code, out, err, _ = cli("inspect", run_uri)
    assert code == 2 and out == "", (code, out, err)
    assert err.strip().count("\n") == 0 and "nests arrays or objects too deeply" in err and "run.json" in err


def test_a_catalogue_nested_too_deeply_is_one_error_line_for_evaluate(run_uri: str) -> None:
    write_run(run_uri)
    store = open_store(run_uri)
    meta = store.list("rank-00000/meta-")[0]
    store.put(meta, b'{"a":' * 100_000)
    code, out, err, _ = cli("evaluate", run_uri)
    assert "Traceback" not in err and "RecursionError" not in err, err
    assert "nests arrays or objects too deeply" in err, (code, out, err)
    assert code == 1 and "data_gap" in out, (code, out)  # the steps it could not read are a finding


# --- files that are not objects (file:// only) ---------------------------------------------------------
def test_a_segment_that_is_a_fifo_is_refused_at_once(file_uri: str) -> None:
    keys = write_run(file_uri)
    path = Path(file_uri.removeprefix("file://")) / keys[1]
    path.unlink()
    os.mkfifo(path)
    assert_read_with_one_problem(file_uri, keys[1], "is a FIFO, not a regular file")


@pytest.mark.parametrize("target", ["/dev/zero", "/etc/passwd"])
def test_a_segment_linked_out_of_the_run_root_is_refused(file_uri: str, target: str) -> None:
    keys = write_run(file_uri)
    path = Path(file_uri.removeprefix("file://")) / keys[1]
    path.unlink()
    path.symlink_to(target)
    assert_read_with_one_problem(file_uri, keys[1], "outside the run root")


def test_a_link_that_stays_inside_the_run_root_is_read(file_uri: str) -> None:
    keys = write_run(file_uri)
    root = Path(file_uri.removeprefix("file://"))
    moved = root / "rank-00000" / "kept.bin"
    (root / keys[1]).rename(moved)
    (root / keys[1]).symlink_to(moved)
    run = trainguard.open_run(file_uri)
    assert run.steps().tolist() == [0, 1, 2, 3, 4, 5] and run.problems == []


def test_the_store_refuses_a_fifo_without_opening_it_for_reading(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(errors.RefusedObject, match="is a FIFO"):
        open_store(f"file://{tmp_path}").get("fifo")


# --- listing ----------------------------------------------------------------------------------------
UNRELATED = 120
PAGE = 4
"""120 unrelated objects in pages of 4: listing them all takes 30 requests per pass. The format probes
are made one page long too (`backends.PROBE_KEYS`, one page of 1000 on a real store)."""


@pytest.fixture
def crowded_prefix(s3_server: Any, s3_bucket: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """`data/` in a bucket, holding many objects that belong to no run."""
    monkeypatch.setattr(backends, "PROBE_KEYS", PAGE)
    client = s3_server.client()
    for i in range(UNRELATED):
        client.put_object(Bucket=s3_bucket, Key=f"data/unrelated-{i:05d}.bin", Body=b"x")
    return f"s3://{s3_bucket}/data"


def proxied_store(uri: str, fault_proxy: Any, s3_server: Any) -> S3Store:
    return S3Store(
        uri,
        endpoint_url=fault_proxy.url,
        access_key_id=s3_server.access_key,
        secret_access_key=s3_server.secret_key,
        list_page_size=PAGE,
    )


def list_requests(fault_proxy: Any) -> int:
    return sum(1 for method, path in fault_proxy.requests if method == "GET" and "list-type=2" in path)


def test_a_prefix_full_of_unrelated_objects_is_no_run_after_a_few_list_requests(
    crowded_prefix: str, fault_proxy: Any, s3_server: Any
) -> None:
    store = proxied_store(crowded_prefix, fault_proxy, s3_server)
    with pytest.raises(errors.NotFound, match="no run at"):
        runs.open_run(crowded_prefix, store=store)
    assert list_requests(fault_proxy) <= 5, fault_proxy.requests


def test_a_run_beside_many_unrelated_objects_opens_and_reads_in_a_few_list_requests(
    crowded_prefix: str, fault_proxy: Any, s3_server: Any, s3_env: dict[str, str]
) -> None:
    write_run(crowded_prefix)
    store = proxied_store(crowded_prefix, fault_proxy, s3_server)
    run = runs.open_run(crowded_prefix, store=store)
    assert run.format == "trainguard" and run.ranks == [0]
    assert run.steps().tolist() == [0, 1, 2, 3, 4, 5]
    assert list_requests(fault_proxy) <= 8, fault_proxy.requests
