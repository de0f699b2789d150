"""The HTML report of a run: one self-contained page with inline SVG plots and the findings it is handed.

`write_report(uri, path, findings=...)` writes the page, `render(run, findings=...)` returns it.
Called by `trainguard report` (which evaluates the run when it has no `--json` findings) and at
the end of `trainguard run`. Pure Python and numpy: no matplotlib, no JavaScript, no external CSS
or fonts, so the file opens anywhere, offline. Three internal parts: `_data` (what is plotted and marked,
read from the store's `Run`), `_svg` (the charts) and `_html` (the page). Runs with prediction
counts (`record_predictions`) get a "Model quality" section per stream: ROC, PR, score
distributions, calibration and the AUC over steps with its error band (`rules.auc`). Evaluating
rules is left to the evaluator: the report imports neither it nor the sidecar.
"""

from trainguard.report._data import FindingLike, ReportError
from trainguard.report._html import end_state, load_json_findings, render, report_run, write_report

__all__ = [
    "FindingLike",
    "ReportError",
    "end_state",
    "load_json_findings",
    "render",
    "report_run",
    "write_report",
]
