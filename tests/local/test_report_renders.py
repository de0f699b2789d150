"""`trainguard report` writes one self-contained HTML page with the plots and the findings marked."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest
import torch
from localmode import run_cli
from torch import nn

import trainguard
import trainguard.torch as tg
from trainguard import report
from trainguard.report import _svg as report_svg
from trainguard.rules import auc


@pytest.fixture
def nan_run(tmp_path: Path) -> str:
    """A numpy run: two ReLU layers, a loss and an eval loss; gradients turn NaN at step 120."""
    uri = "file://" + str(tmp_path / "run")
    rng = np.random.default_rng(0)
    with trainguard.Recorder(uri, save_interval=2) as rec:
        for step in range(200):
            for i in range(2):
                w = rng.normal(size=(16, 16)).astype(np.float32)
                g = w * 1e-2 if step < 120 else np.full_like(w, np.nan)
                rec.record_tensor(f"fc{i}.weight", w, collection="weights", order=i)
                rec.record_tensor(f"grad/fc{i}.weight", g, collection="gradients", order=i)
                act = np.maximum(rng.normal(size=(32, 16)) - (2.0 if i else 0.0), 0)
                rec.record_tensor(f"act/fc{i}", act, collection="activations", activation="relu", order=i)
            rec.record_scalar("loss", 2.0 / (1 + step / 20))
            if step % 20 == 0:
                rec.record_scalar("val_loss", 2.2 / (1 + step / 25), mode="eval")
            rec.step()
    return uri


def _svg(page: str, plot: str) -> str:
    m = re.search(rf'<svg[^>]*data-plot="{plot}".*?</svg>', page, re.DOTALL)
    assert m, f"no {plot} plot"
    return m.group(0)


def test_report_of_a_nan_run_plots_every_series_and_marks_the_finding(nan_run: str, tmp_path: Path) -> None:
    out = tmp_path / "r" / "report.html"
    res = run_cli(["report", nan_run, "-o", str(out)], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    page = out.read_text()
    for plot in ("loss", "grad_norm", "weight_norm", "update_ratio", "dead_units", "nonfinite"):
        _svg(page, plot)
    loss = _svg(page, "loss")
    assert 'data-series="loss (train)"' in loss and 'data-series="val_loss (eval)"' in loss
    grads = _svg(page, "grad_norm")
    assert 'data-series="grad/fc0.weight"' in grads and 'data-series="grad/fc1.weight"' in grads
    # 60 finite points of 100 saved steps: the path stops where the gradient went NaN ...
    path = re.search(r'data-series="grad/fc0.weight" d="([^"]*)"', grads).group(1)
    assert path.count("M") == 1 and path.count("L") == 59
    # ... a triangle marks the first NaN, and the evaluator's finding is drawn at its step.
    assert 'class="nonfinite"' in grads and "at step 120" in grads
    assert re.search(r'class="finding finding-critical" data-rule="exploding_tensor" data-step="120"', grads)
    assert 'class="finding-row" data-rule="exploding_tensor"' in page
    # fc1's units are mostly dead (inputs shifted by -2): its dead fraction is plotted
    assert 'data-series="act/fc1"' in _svg(page, "dead_units")


def test_report_is_self_contained(nan_run: str, tmp_path: Path) -> None:
    page = report.write_report(nan_run, tmp_path / "r.html", findings=[]).read_text()
    assert "<script" not in page.lower()
    assert not re.search(r'(?:src|href)\s*=\s*"(?:https?:)?//', page), "an external resource is referenced"
    assert "@import" not in page and "url(" not in page
    assert "No findings" in page
    svgs = re.findall(r"<svg.*?</svg>", page, re.DOTALL)
    assert len(svgs) >= 6
    for svg in svgs:  # inline SVG must be well-formed XML, or browsers drop the plot
        root = ElementTree.fromstring(svg)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"


def test_report_takes_findings_and_the_outcome_from_a_json_file(nan_run: str, tmp_path: Path) -> None:
    doc = {
        "stopped": True, "stopped_by": "nan-guard", "exit_code": 3,
        "stop": {"step": 40, "message": "made-up finding for the test"},
        "findings": [{"rule": "nan-guard", "severity": "warning", "step": 40, "rank": 0, "tensor": "fc1.weight",
                      "message": "made-up finding for the test"}],
    }  # fmt: skip
    (tmp_path / "outcome.json").write_text(json.dumps(doc))
    out = tmp_path / "report.html"
    res = run_cli(["report", nan_run, "-o", str(out), "--json", str(tmp_path / "outcome.json")], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    page = out.read_text()
    assert "Stopped by rule nan-guard" in page
    weights = _svg(page, "weight_norm")
    assert re.search(r'class="finding finding-warning" data-rule="nan-guard" data-step="40"', weights)
    assert "<circle" in weights, "the named tensor's point at the finding's step is circled"
    assert "exploding_tensor" not in page, "findings from --json replace the evaluation"


def test_report_of_a_missing_run_is_a_one_line_error(tmp_path: Path) -> None:
    res = run_cli(
        ["report", "file://" + str(tmp_path / "nothing"), "-o", str(tmp_path / "r.html")], cwd=tmp_path
    )
    assert res.returncode == 2
    assert res.stderr.startswith("trainguard: error: no run at")


def test_a_series_that_cannot_be_drawn_on_a_log_axis_says_so_in_the_legend(tmp_path: Path) -> None:
    uri = "file://" + str(tmp_path / "zero")
    with trainguard.Recorder(uri, save_interval=1) as rec:
        for _ in range(5):
            rec.record_tensor("grad/dead.weight", np.zeros((4, 4), np.float32), collection="gradients")
            rec.record_tensor("grad/live.weight", np.ones((4, 4), np.float32), collection="gradients")
            rec.step()
    page = report.write_report(uri, tmp_path / "r.html", findings=[]).read_text()
    legend = re.search(r'<figure id="plot-grad_norm">.*?</figure>', page, re.DOTALL).group(0)
    assert "grad/dead.weight <i" in legend and "zero throughout" in legend
    assert "grad/live.weight</span>" in legend


@pytest.fixture
def prediction_run(tmp_path: Path) -> str:
    """A numpy run with a binary prediction stream (10% positives) and a 3-class eval stream."""
    uri = "file://" + str(tmp_path / "pred")
    rng = np.random.default_rng(0)
    with trainguard.Recorder(uri, save_interval=5) as rec:
        for step in range(60):
            y = (rng.random(256) < 0.1).astype(float)
            rec.record_predictions(1 / (1 + np.exp(-(rng.normal(size=256) + 1.5 * y - 2))), y, name="click")
            if step % 10 == 0:
                rec.record_predictions(rng.dirichlet(np.ones(3), 64), rng.integers(0, 3, 64), mode="eval")
            rec.record_scalar("loss", 1 / (1 + step))
            rec.step()
    return uri


def test_a_run_with_predictions_gets_roc_pr_distribution_calibration_and_auc_plots(
    prediction_run: str, tmp_path: Path
) -> None:
    page = report.write_report(prediction_run, tmp_path / "r.html", findings=[]).read_text()
    assert '<h2 id="predictions">Model quality from predictions</h2>' in page
    streams = re.findall(
        r'<section class="prediction-stream" data-stream="([^"]*)">(.*?)</section>', page, re.DOTALL
    )
    assert [name for name, _ in streams] == [
        "pred/click (train)",
        *(f"pred/predictions/class{c} (eval)" for c in range(3)),
    ]
    click = streams[0][1]
    for title in (
        "ROC curve",
        "Precision-recall curve",
        "Score distributions",
        "Calibration",
        "AUC over steps",
    ):
        assert f"<figcaption>{title}" in click
    for plot in ("roc", "pr", "score_dist", "calibration", "auc"):
        svg = _svg(click, plot)
        assert ElementTree.fromstring(svg).tag == "{http://www.w3.org/2000/svg}svg"
    assert 'data-series="ROC"' in _svg(click, "roc") and ">false positive rate</text>" in _svg(click, "roc")
    dist = _svg(click, "score_dist")
    assert 'data-series="positives"' in dist and 'data-series="negatives"' in dist
    auc_svg = _svg(click, "auc")
    assert 'class="band" data-series="cumulative"' in auc_svg
    assert re.search(r'class="band" data-series="decayed \(half-life \d+ steps\)"', auc_svg)
    _, counts = trainguard.open_run(prediction_run).predictions("pred/click")
    est = auc.auc_from_counts(counts.sum(axis=0))
    assert f"AUC {est.auc:.4f} &plusmn; {2 * est.se:.4f} (2 SE)" in click
    assert "15360 examples" in click


def test_a_run_without_predictions_has_no_model_quality_section(nan_run: str, tmp_path: Path) -> None:
    page = report.write_report(nan_run, tmp_path / "r.html", findings=[]).read_text()
    assert "Model quality" not in page and "prediction-stream" not in page


def test_a_run_written_twice_on_one_uri_is_reported_for_its_newest_attempt(
    nan_run: str, tmp_path: Path
) -> None:
    # The same script again on the same URI, fixed this time: a second attempt, healthy, 50 steps.
    rng = np.random.default_rng(1)
    with trainguard.Recorder(nan_run, save_interval=2) as rec:
        for step in range(50):
            w = (0.25 * rng.normal(size=(16, 16))).astype(np.float32)  # a He-scaled init this time
            rec.record_tensor("fc0.weight", w, collection="weights", order=0)
            rec.record_tensor("grad/fc0.weight", w * 1e-2, collection="gradients", order=0)
            rec.record_scalar("loss", 2.0 / (1 + step / 20))
            rec.step()
    assert len(trainguard.open_run(nan_run).attempts()) == 2
    out = tmp_path / "report.html"
    res = run_cli(["report", nan_run, "-o", str(out)], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    page = out.read_text()
    assert "the rank was written more than once on this URI" in page
    assert re.search(r"<th>saved steps</th><td>25 \(steps 0 to 48\)</td>", page)  # the newest attempt's only
    assert "No findings" in page  # the first attempt's NaN is not drawn on the second's plots
    assert 'data-series="grad/fc1.weight"' not in page  # nor its tensors


def test_log_ticks_are_round_values() -> None:
    # two decades or more: powers of ten; less: 1, 2 and 5 times them (never 0.398 or 0.251)
    assert [10**t for t in report_svg._ticks(-3.2, 1.1, log=True)] == pytest.approx([1e-3, 1e-2, 1e-1, 1, 10])
    assert [10**t for t in report_svg._ticks(-0.9, 0.1, log=True)] == pytest.approx([0.2, 0.5, 1])
    lo, hi = report_svg._log_axis(-0.35, -0.25)  # 0.45 to 0.56: widened to the round values around it
    assert (10**lo, 10**hi) == pytest.approx((0.2, 1.0))


def test_the_banner_counts_the_rows_of_the_findings_table(tmp_path: Path) -> None:
    repeated = [
        {
            "rule": "loss_spike",
            "severity": "warning",
            "step": s,
            "rank": 0,
            "tensor": "loss",
            "message": "spike",
        }
        for s in (10, 20, 30, 40, 50)
    ]
    uri = "file://" + str(tmp_path / "run")
    with trainguard.Recorder(uri, save_interval=1) as rec:
        for step in range(60):
            rec.record_scalar("loss", 1.0 + (step % 10 == 0))
            rec.step()
    page = report.write_report(uri, tmp_path / "r.html", findings=repeated).read_text()
    assert page.count('class="finding-row"') == 1
    assert "1 warning or critical finding (by rule, rank and tensor)" in page


def _banner_of(page: str) -> str:
    return re.search(r'<div class="banner ([^"]*)">(.*?)</div>', page, re.DOTALL).group(0)


def test_a_crashed_run_is_never_under_a_green_banner(tmp_path: Path) -> None:
    uri = "file://" + str(tmp_path / "crash")
    with pytest.raises(RuntimeError), trainguard.Recorder(uri, save_interval=1) as rec:
        for step in range(20):
            rec.record_scalar("loss", 1.0 / (1 + step))
            rec.step()
            if step == 12:
                raise RuntimeError("the data loader broke")
    banner = _banner_of(report.write_report(uri, tmp_path / "r.html", findings=[]).read_text())
    assert 'class="banner stopped"' in banner and "No warnings" not in banner
    assert "<b>Crashed</b>" in banner and "RuntimeError: the data loader broke" in banner
    assert "Up to then: no warning from the rules." in banner


def test_a_run_without_end_markers_is_reported_as_not_finished(tmp_path: Path) -> None:
    uri = "file://" + str(tmp_path / "open")
    with trainguard.Recorder(uri, save_interval=1) as rec:
        for step in range(10):
            rec.record_scalar("loss", 1.0 / (1 + step))
            rec.step()
    (tmp_path / "open" / "rank-00000" / "END.json").unlink()
    banner = _banner_of(report.write_report(uri, tmp_path / "r.html", findings=[]).read_text())
    assert 'class="banner warn"' in banner
    assert "<b>Not finished</b>: running or no END (0 of 1 ranks ended)" in banner


def test_exact_zeros_on_a_log_axis_are_drawn_in_a_lane_labelled_0(tmp_path: Path) -> None:
    """A dead network: five of six gradients exactly zero, one alive; none may vanish from the plot."""
    uri = "file://" + str(tmp_path / "dead")
    with trainguard.Recorder(uri, save_interval=1) as rec:
        for step in range(8):
            for i in range(6):
                g = np.full((4, 4), 0.5 if i == 5 else 0.0, np.float32)
                if i == 4 and step % 2:  # a layer alive every other step: one line through both regions
                    g[:] = 1e-3
                rec.record_tensor(f"grad/fc{i}.weight", g, collection="gradients", order=i)
            rec.step()
    svg = _svg(report.write_report(uri, tmp_path / "r.html", findings=[]).read_text(), "grad_norm")
    lane = re.search(r'<g class="zero-lane">.*?</g>', svg).group(0)
    assert ">0</text>" in lane and "exactly 0" in lane
    zero_y = float(re.search(r'<text x="[\d.]+" y="([\d.]+)"[^>]*>0</text>', lane).group(1)) - 4
    for i in range(4):
        path = re.search(rf'data-series="grad/fc{i}.weight" d="([^"]*)"', svg).group(1)
        ys = [float(y) for y in re.findall(r"[ML][\d.]+ ([\d.]+)", path)]
        assert ys == [pytest.approx(zero_y, abs=0.11)] * 8, path  # 8 points, all on the zero lane
        assert path.count("M") == 1 and path.count("L") == 7
    alive = re.search(r'data-series="grad/fc4.weight" d="([^"]*)"', svg).group(1)
    assert alive.count("M") == 1 and alive.count("L") == 7


def test_a_fraction_axis_runs_from_0_to_1(tmp_path: Path) -> None:
    uri = "file://" + str(tmp_path / "alive")
    rng = np.random.default_rng(0)
    with trainguard.Recorder(uri, save_interval=1, tier1_interval=1) as rec:
        for _ in range(6):
            act = np.abs(rng.normal(size=(32, 8))) + 0.1  # every unit active: a dead fraction of 0
            rec.record_tensor("act/relu1", act, collection="activations", activation="relu")
            rec.step()
    svg = _svg(report.write_report(uri, tmp_path / "r.html", findings=[]).read_text(), "dead_units")
    y_ticks = [float(t) for t in re.findall(r'text-anchor="end" class="tick">(-?[\d.e+]+)</text>', svg)]
    assert (min(y_ticks), max(y_ticks)) == (0, 1), y_ticks  # not -0.5 to 0.5 around a constant 0


def test_a_gap_in_a_series_breaks_its_line(tmp_path: Path) -> None:
    uri = "file://" + str(tmp_path / "gap")
    with trainguard.Recorder(uri, save_interval=1) as rec:
        for step in range(60):
            if step < 10 or step >= 50:  # nothing measured for steps 10-49
                rec.record_scalar("loss", 1.0 / (1 + step))
            rec.step()
    svg = _svg(report.write_report(uri, tmp_path / "r.html", findings=[]).read_text(), "loss")
    path = re.search(r'data-series="loss \(train\)" d="([^"]*)"', svg).group(1)
    assert path.count("M") == 2 and path.count("L") == 18


def test_a_rules_label_is_written_once_per_plot(nan_run: str, tmp_path: Path) -> None:
    findings = [
        {
            "rule": "exploding_tensor",
            "severity": "critical",
            "step": s,
            "tensor": f"grad/fc{i}.weight",
            "message": "nan",
        }
        for i, s in ((0, 120), (1, 122))
    ]
    svg = _svg(report.write_report(nan_run, tmp_path / "r.html", findings=findings).read_text(), "grad_norm")
    assert svg.count('data-rule="exploding_tensor"') == 2  # a line at each tensor's first finding
    assert svg.count('class="finding-label"') == 1


def test_the_loss_is_plotted_at_every_step_and_the_statistics_at_saved_steps(tmp_path: Path) -> None:
    uri = "file://" + str(tmp_path / "torch")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    with tg.Hook(uri, save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(187):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            hook.record_scalar("loss", loss)
    out = tmp_path / "report.html"
    res = run_cli(["report", uri, "-o", str(out)], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    page = out.read_text()
    loss = re.search(r'data-series="loss \(train\)" d="([^"]*)"', _svg(page, "loss")).group(1)
    assert (loss.count("M"), loss.count("L")) == (1, 186)  # one line through the 187 steps' losses
    grad = re.search(r'data-series="grad/0.weight" d="([^"]*)"', _svg(page, "grad_norm")).group(1)
    assert grad.count("M") + grad.count("L") == 19  # steps 0, 10, ..., 180
