"""The progress line: a reserved bottom row on terminals, sparse plain lines in logs."""

from __future__ import annotations

import io

import pytest

from trainguard.local.supervise import Progress


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_terminal_progress_uses_the_bottom_row_redraws_only_on_change_and_gives_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LINES", "30")
    monkeypatch.setenv("COLUMNS", "120")
    out = io.StringIO()
    p = Progress(out, tty=True)
    p.start()
    assert out.getvalue() == "\n\x1b7\x1b[1;29r\x1b8\x1b[1A", "rows 1..29 scroll; row 30 is ours"
    out.truncate(0), out.seek(0)
    p.update(step=10, findings=0, critical=0, elapsed_seconds=1.2)
    first = out.getvalue()
    assert first.startswith("\x1b7\x1b[30;1H\x1b[2K") and first.endswith("\x1b8")
    assert "step 10 | findings: 0 | 1s" in first
    p.update(step=10, findings=0, critical=0, elapsed_seconds=1.4)  # same text: nothing written
    assert out.getvalue() == first
    p.update(step=20, findings=2, critical=1, elapsed_seconds=2.0)
    assert "step 20 | findings: 2 (1 critical) | 2s" in out.getvalue()[len(first) :]
    p.line("a rule fired")
    assert out.getvalue().endswith("[trainguard] a rule fired\n")
    p.done()
    assert out.getvalue().endswith("\x1b7\x1b[r\x1b[30;1H\x1b[2K\x1b8"), "scroll region reset, row cleared"


def test_log_progress_writes_a_plain_line_only_when_the_step_moved_and_the_interval_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock()
    monkeypatch.setattr("trainguard.local.supervise.time.monotonic", clock)
    out = io.StringIO()
    p = Progress(out, tty=False, interval_seconds=10)
    p.start()
    clock.now = 100.0
    p.update(step=None, findings=0, critical=0, elapsed_seconds=0)  # nothing evaluated yet: no line
    clock.now = 101.0
    p.update(step=10, findings=0, critical=0, elapsed_seconds=1)
    clock.now = 105.0
    p.update(step=20, findings=0, critical=0, elapsed_seconds=5)  # within the interval
    clock.now = 112.0
    p.update(step=30, findings=1, critical=0, elapsed_seconds=12, loss=0.123456)
    clock.now = 130.0
    p.update(step=30, findings=1, critical=0, elapsed_seconds=30)  # step did not move
    lines = out.getvalue().splitlines()
    assert lines == [
        "[trainguard] step 10 | findings: 0 | 1s",
        "[trainguard] step 30 | loss 0.1235 | findings: 1 | 12s",
    ]
    assert "\x1b" not in out.getvalue()


def test_a_message_line_is_wrapped_within_80_columns_and_a_long_path_stays_whole() -> None:
    out = io.StringIO()
    p = Progress(out, tty=False)
    path = "/tmp/" + "x" * 90 + "/report.html"
    p.line("step 30 rank 0: exploding_tensor (critical, stop): " + "fc.weight has NaN values " * 6 + path)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[trainguard] step 30 rank 0: exploding_tensor")
    assert all(line.startswith("    ") for line in lines[1:]) and lines[-1] == "    " + path
    assert all(len(line) <= 80 for line in lines[:-1])


def test_quiet_progress_writes_nothing() -> None:
    out = io.StringIO()
    p = Progress(out, tty=True, quiet=True)
    p.start()
    p.update(step=1, findings=0, critical=0, elapsed_seconds=0)
    p.line("x")
    p.done()
    assert out.getvalue() == ""
