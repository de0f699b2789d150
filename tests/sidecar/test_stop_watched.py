"""The trainer's first `should_stop()` marks the stop file as watched; the sidecar reports it (stopWatched)."""

from __future__ import annotations

from pathlib import Path

from tests.sidecar.runs import write_run
from trainguard.sidecar.evaluator import Evaluator
from trainguard.sidecar.report_status import build_report
from trainguard.stop_flag import StopFlag, watched
from trainguard.store.backends import open_store


def test_polling_the_stop_flag_marks_it_watched_and_the_report_says_so(file_uri: str, tmp_path: Path) -> None:
    stop_file = str(tmp_path / "shared" / "stop")
    (tmp_path / "shared").mkdir()
    write_run(open_store(file_uri), segments=1)
    ev = Evaluator(file_uri, stop_file=stop_file, checkpoint=False)
    assert not watched(stop_file) and build_report(ev, now=0.0, rank=0)["stopWatched"] is False
    flag = StopFlag(stop_file)
    assert flag.is_set() is False  # the trainer's first poll
    assert watched(stop_file) and build_report(ev, now=0.0, rank=0)["stopWatched"] is True


def test_a_stop_flag_in_a_directory_it_cannot_write_still_works(tmp_path: Path) -> None:
    flag = StopFlag(str(tmp_path / "missing-dir" / "stop"))
    assert flag.is_set() is False  # the marker cannot be made: no error, and no wait is promised
