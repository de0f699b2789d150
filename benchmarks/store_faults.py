"""Store faults: what capture keeps when the store goes down, fills up, slows down or stops answering.

One command: `.venv/bin/python benchmarks/store_faults.py [--quick] [--scenarios down-4s,disk-full,...]`.

A numpy training loop records through `trainguard.Recorder` (save every step, flush every second,
20 tensors and a loss: a small model saved at its busiest) at 100 steps a second. Each scenario
trains 3 s, injects its fault, trains on, and closes. The store is a real SeaweedFS (S3) reached
through a TCP proxy that this benchmark controls: "down" closes its port and resets the open
connections (connection refused, as a crashed or restarting server), "slow" delays every chunk a
client sends, "dead" accepts connections and never answers. "killed" SIGKILLs SeaweedFS itself
and restarts it. "disk full" writes to file:// on a tmpfs of a few MiB that a ballast file fills
and later frees (in a mount namespace of its own, `unshare -rm`; skipped where that is not
allowed). Afterwards the run is read back straight from the store.

Columns: steps trained; steps stored; steps lost (trained but not stored); steps the writer reports
lost (END.json `lost_steps`, or `Recorder.lost_steps` where END.json could not be written);
whether the two agree; whether END.json was written; how long `close()` took; the 99th percentile
and the longest training step after the first second (the recorder's work, without the loop's
sleep); and "survived": training ran to the end, its p99 step stayed within the fault-free run's
plus the hook's block allowance (`max_block_seconds`, 0.05 s), and every lost step is counted.
(The p99, not the longest step, is judged: on a shared machine one step in a thousand may wait
for the CPU whatever the store does; the longest is shown beside it.)
Target: 0 steps lost for outages the pending memory covers (64 MiB by default), an exact count
beyond it (the `small memory` row), `close()` within its 10 s deadline.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import trainguard  # after the sys.path line above
from trainguard.store import run_format, upload_queue
from trainguard.store.backends import open_store

STEPS_PER_SECOND = 100
TENSORS = 20
WARMUP_SECONDS = 3.0
AFTER_SECONDS = 10.0
WARMUP_STEPS = 100
"""Steps whose times are not counted (the first second: imports, the catalogue, the first uploads)."""
BLOCK_ALLOWANCE_SECONDS = 0.05
"""The hook's `max_block_seconds`: the most a fault may add to a step."""


# --- the training loop ---------------------------------------------------------------------------------
@dataclass
class Trained:
    steps: int = 0
    step_seconds: list[float] = field(default_factory=list)
    """Each step's time after the first WARMUP_STEPS (which include the catalogue, imports, first PUTs)."""
    close_seconds: float = 0.0
    lost_reported: int = 0
    seconds: float = 0.0


def train(
    rec: trainguard.Recorder, seconds: float, events: list[tuple[float, Callable[[], None]]]
) -> Trained:
    """Train for `seconds` at STEPS_PER_SECOND, running each (time, action) of `events` when its time comes."""
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal((32, 32)).astype(np.float32) for _ in range(TENSORS // 2)]
    out = Trained()
    pending = sorted(events, key=lambda e: e[0])
    started = time.monotonic()
    next_step = started
    while (now := time.monotonic()) - started < seconds:
        while pending and now - started >= pending[0][0]:
            threading.Thread(target=pending.pop(0)[1], daemon=True).start()  # a fault never blocks the loop
        t0 = time.monotonic()
        for i, w in enumerate(weights):
            w -= 1e-3 * w
            rec.record_tensor(f"fc{i}.weight", w, collection="weights")
            rec.record_tensor(f"grad/fc{i}.weight", w * 1e-3, collection="gradients")
        rec.record_scalar("loss", float(1.0 / (out.steps + 1)))
        rec.step()
        if out.steps >= WARMUP_STEPS:
            out.step_seconds.append(time.monotonic() - t0)
        out.steps += 1
        next_step += 1.0 / STEPS_PER_SECOND
        time.sleep(max(0.0, next_step - time.monotonic()))
    out.seconds = time.monotonic() - started
    t0 = time.monotonic()
    rec.close()
    out.close_seconds = time.monotonic() - t0
    out.lost_reported = rec.lost_steps
    return out


def new_recorder(uri: str, **settings: Any) -> trainguard.Recorder:
    return trainguard.Recorder(uri, save_interval=1, flush_interval_seconds=1.0, **settings)


# --- a TCP proxy in front of the S3 server --------------------------------------------------------------
class TcpProxy:
    """Forwards 127.0.0.1:port to the upstream port; `down()`, `up()`, `dead()`, `slow(seconds)` change how."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.latency_seconds = 0.0
        self.is_dead = False
        self.closed = False
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.up()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        """Refuse connections and reset the open ones, as a server that crashed."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            conns, self._conns = self._conns, set()
        for c in conns:
            with contextlib.suppress(OSError):
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                c.close()

    def dead(self) -> None:
        """Accept connections and never answer (requests in flight get no answer either)."""
        self.is_dead = True

    def close(self) -> None:
        """Reset everything; what a dead endpoint held is dropped, never delivered late."""
        self.closed = True
        self.down()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns |= {client, upstream}
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, request: bool) -> None:
        try:
            while data := src.recv(65536):
                while self.is_dead and not self.closed:
                    time.sleep(0.05)
                if self.closed:
                    return
                if request and self.latency_seconds:
                    time.sleep(self.latency_seconds)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.close()


# --- scenarios -------------------------------------------------------------------------------------------
@dataclass
class Row:
    fault: str
    injected: str
    steps: int = 0
    stored: int = 0
    lost: int = 0
    reported: int = 0
    end_written: bool = False
    close_seconds: float = 0.0
    max_step_ms: float = 0.0
    p99_step_ms: float = 0.0
    rate_kb_per_second: float = 0.0
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def read_back(uri: str, store: Any, trained: Trained, row: Row) -> Row:
    """Fill the row from the run as stored (END.json, or the recorder's count when END.json is missing)."""
    run = trainguard.open_run(uri, store=store)
    stored = set(run.steps().tolist())
    row.steps, row.stored = trained.steps, len(stored & set(range(trained.steps)))
    row.lost = trained.steps - row.stored
    try:
        end = run_format.EndInfo.model_validate(json.loads(store.get(run_format.end_key(0))))
        row.end_written, row.reported = True, end.lost_steps
    except Exception:  # noqa: BLE001 - END.json missing or unreadable: the recorder's own count stands
        row.reported = trained.lost_reported
    row.close_seconds = trained.close_seconds
    times = np.asarray(trained.step_seconds or [0.0]) * 1000
    row.max_step_ms, row.p99_step_ms = float(times.max()), float(np.percentile(times, 99))
    # what pending segments hold in memory
    held = sum(upload_queue.segment_nbytes(seg) for seg in run.segments())
    row.rate_kb_per_second = held / 1000 / max(row.stored / STEPS_PER_SECOND, 1e-9)
    return row


@contextlib.contextmanager
def seaweedfs() -> Iterator[Any]:
    from tests.conftest import start_seaweedfs

    server = start_seaweedfs()
    try:
        yield server
    finally:
        server.stop()


def s3_scenario(server: Any, name: str, injected: str, fault_seconds: float, *, settings: dict[str, Any] | None = None,
                inject: Callable[[TcpProxy, Any], list[tuple[float, Callable[[], None]]]]) -> Row:  # fmt: skip
    proxy = TcpProxy(int(server.endpoint_url.rsplit(":", 1)[1]))
    bucket = server.create_bucket()
    uri = f"s3://{bucket}/run"
    saved = {k: os.environ.get(k) for k in server.env()}
    os.environ.update({**server.env(), "AWS_ENDPOINT_URL": proxy.url})
    try:
        rec = new_recorder(uri, **(settings or {}))
        trained = train(rec, WARMUP_SECONDS + fault_seconds + AFTER_SECONDS, inject(proxy, server))
    finally:
        proxy.close()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    wait_store(server)
    store = open_store(uri, endpoint_url=server.endpoint_url, access_key_id=server.access_key,
                       secret_access_key=server.secret_key)  # fmt: skip
    row = read_back(uri, store, trained, Row(name, injected))
    server.delete_bucket(bucket)
    return row


def wait_store(server: Any, timeout_seconds: float = 60.0) -> None:
    """Wait until a restarted SeaweedFS serves objects again (its volumes load after S3 answers)."""
    deadline = time.monotonic() + timeout_seconds
    client = server.client()
    while time.monotonic() < deadline:
        try:
            client.list_buckets()
            return
        except Exception:  # noqa: BLE001 - not ready yet
            time.sleep(0.2)


def at(t: float, action: Callable[[], None]) -> tuple[float, Callable[[], None]]:
    return (WARMUP_SECONDS + t, action)


def down_for(seconds: float) -> Callable[[TcpProxy, Any], list[tuple[float, Callable[[], None]]]]:
    return lambda proxy, server: [at(0, proxy.down), at(seconds, proxy.up)]


def kill_for(seconds: float) -> Callable[[TcpProxy, Any], list[tuple[float, Callable[[], None]]]]:
    return lambda proxy, server: [at(0, server.kill), at(seconds, server.restart)]


def slow_for(
    latency: float, seconds: float
) -> Callable[[TcpProxy, Any], list[tuple[float, Callable[[], None]]]]:
    def inject(proxy: TcpProxy, server: Any) -> list[tuple[float, Callable[[], None]]]:
        return [at(0, lambda: setattr(proxy, "latency_seconds", latency)),
                at(seconds, lambda: setattr(proxy, "latency_seconds", 0.0))]  # fmt: skip

    return inject


def dead_from_now() -> Callable[[TcpProxy, Any], list[tuple[float, Callable[[], None]]]]:
    return lambda proxy, server: [at(0, proxy.dead)]


# --- disk full (a child in a mount namespace of its own) -------------------------------------------------
DISK_MIB = 4


def disk_full_child(mount: str, fault_seconds: float) -> None:
    """In the child: train on file:// under `mount` (a fresh tmpfs), fill it, free it, print the row as JSON."""
    uri = f"file://{mount}/run"
    ballast = Path(mount) / "ballast"

    def fill() -> None:
        with open(ballast, "wb") as f, contextlib.suppress(OSError):
            while True:
                f.write(bytes(65536))
                f.flush()

    rec = new_recorder(uri)
    trained = train(rec, WARMUP_SECONDS + fault_seconds + AFTER_SECONDS,
                    [at(0, fill), at(fault_seconds, lambda: ballast.unlink(missing_ok=True))])  # fmt: skip
    row = read_back(uri, open_store(uri), trained, Row("disk full", ""))
    print(json.dumps(asdict(row)))


def disk_full(fault_seconds: float) -> Row:
    injected = f"{DISK_MIB} MiB tmpfs filled for {fault_seconds:g}s"
    unshare = shutil.which("unshare")
    if unshare is None:
        return Row("disk full", injected, note="not run: no unshare(1) here")
    mount = tempfile.mkdtemp(prefix="tg-full-")
    try:
        script = (f"mount -t tmpfs -o size={DISK_MIB}m tmpfs {mount} && exec {sys.executable} "
                  f"{Path(__file__).resolve()} --disk-full-child {mount} --fault-seconds {fault_seconds}")  # fmt: skip
        done = subprocess.run([unshare, "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=600,
                              check=False, cwd=ROOT)  # fmt: skip
    finally:
        shutil.rmtree(mount, ignore_errors=True)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["?"])[-1]
        return Row("disk full", injected, note=f"not run: cannot mount a tmpfs here ({reason})")
    row = Row(**json.loads(done.stdout.strip().splitlines()[-1]))
    row.injected = injected
    return row


# --- the table -------------------------------------------------------------------------------------------
def scenarios(quick: bool) -> dict[str, tuple[str, str, float, dict[str, Any], Any]]:
    long = 20.0 if quick else 60.0
    return {
        "none": ("no fault", "-", 0.0, {}, lambda p, s: []),
        "down-4s": ("S3 down 4 s", "port closed 4 s", 4.0, {}, down_for(4.0)),
        "down-long": (f"S3 down {long:g} s", f"port closed {long:g} s", long, {}, down_for(long)),
        "down-long-small": (
            f"S3 down {long:g} s, small memory",
            f"port closed {long:g} s, max_pending_bytes 512 kB",
            long,
            {"max_pending_bytes": 512_000},
            down_for(long),
        ),
        "killed": ("S3 killed 4 s", "SeaweedFS SIGKILL, restarted 4 s later", 4.0, {}, kill_for(4.0)),
        "slow": ("slow store", "every request +0.5 s for 10 s", 10.0, {}, slow_for(0.5, 10.0)),
        "dead": ("dead endpoint", "accepts, never answers (to the end)", 3.0, {}, dead_from_now()),
        "disk-full": ("disk full", "", 10.0, {}, None),
    }


def survived(row: Row, baseline_ms: float) -> str:
    if row.note:
        return "-"
    ok = row.lost == row.reported and row.p99_step_ms <= baseline_ms + BLOCK_ALLOWANCE_SECONDS * 1000
    return "yes" if ok else "NO"


def render(rows: list[Row]) -> str:
    baseline = next((r.p99_step_ms for r in rows if r.fault == "no fault"), rows[0].p99_step_ms)
    head = ("fault", "injected", "steps", "stored", "lost", "reported lost", "exact", "END.json", "close s",
            "step ms p99 / max", "survived")  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r.note:
            lines.append(f"| {r.fault} | {r.injected} | {r.note} |" + " |" * (len(head) - 3))
            continue
        cells = (r.fault, r.injected, r.steps, r.stored, r.lost, r.reported, "yes" if r.lost == r.reported else "NO",
                 "yes" if r.end_written else "no", f"{r.close_seconds:.1f}", f"{r.p99_step_ms:.1f} / {r.max_step_ms:.1f}",
                 survived(r, baseline))  # fmt: skip
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    rate = next((r.rate_kb_per_second for r in rows if r.fault == "no fault"), 0.0)
    if rate:
        minutes = 64 * 2**20 / (rate * 1000) / 60
        lines.append(f"\nThis run makes {rate:.0f} kB/s of segments (in memory, before compression): the default "
                     f"pending memory (64 MiB) holds "
                     f"{minutes:.0f} minutes of it.")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="long outages of 20 s instead of 60 s")
    parser.add_argument("--scenarios", help="comma-separated subset of: " + ", ".join(scenarios(False)))
    parser.add_argument("--disk-full-child", metavar="MOUNT", help=argparse.SUPPRESS)
    parser.add_argument("--fault-seconds", type=float, default=10.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.disk_full_child:
        disk_full_child(args.disk_full_child, args.fault_seconds)
        return
    chosen = scenarios(args.quick)
    if args.scenarios:
        chosen = {k: v for k, v in chosen.items() if k in args.scenarios.split(",")}
    rows: list[Row] = []
    with seaweedfs() as server:
        for key, (name, injected, seconds, settings, inject) in chosen.items():
            print(f"running: {name} ...", file=sys.stderr, flush=True)
            if key == "disk-full":
                rows.append(disk_full(seconds))
            else:
                rows.append(s3_scenario(server, name, injected, seconds, settings=settings, inject=inject))
    print(
        f"# Store faults: {STEPS_PER_SECOND} steps/s, every step saved, {TENSORS} tensors + loss, flush 1 s\n"
    )
    print(render(rows))


if __name__ == "__main__":
    main()
