"""The second blind split of the detection benchmark (`benchmarks/detection/blind2/`) is trained by the
runner with its own scripts (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from benchmarks.detection import run
from benchmarks.detection.blind2 import suite

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_runner_trains_a_program_of_this_split_with_its_scripts(tmp_path: Path) -> None:
    # the split's programs subclass the first split's: the runner must not hand them to the first split's scripts
    prog = replace(BY_NAME["blind2_Y12_normalised_with_stats_1000x_off"], steps=3)
    truth = run._train_one((prog, 0, str(tmp_path)))
    assert truth.program == prog.name and len(truth.losses) == 3
    assert truth.losses[0] > 1e6  # millivolts subtracted from volts: inputs near -1e4 standard deviations
