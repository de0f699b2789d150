"""The HTML report as a person sees it: headless Chromium (Debian's `chromium`) renders the report of the
demo's diverging run and of a healthy run, to the DOM and to a PNG.

Checked in the browser: no console or load error, every plot is laid out with a real size and draws
its series, finding markers carry their rule's label, plots sit side by side on a wide window and
share the x-axis from step 0, and the screenshot of every plot holds coloured pixels (a plot the
browser dropped, or drew empty, has none). The probe script is added to a copy of the page only;
the report itself has no JavaScript.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from localmode import example, run_cli

pytestmark = pytest.mark.slow

WINDOW_WIDTH = 1600
PROBE = """<script>
window.__errors = [];
window.addEventListener("error", e => window.__errors.push(String(e.message || (e.target && e.target.outerHTML))), true);
const consoleError = console.error;
console.error = (...a) => { window.__errors.push(a.join(" ")); consoleError(...a); };
window.addEventListener("load", () => {
  const figures = [...document.querySelectorAll("figure")].map(f => {
    const svg = f.querySelector("svg"), r = svg.getBoundingClientRect();
    const series = [...svg.querySelectorAll("path.series")];
    return {
      id: f.id, x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height,
      series: series.length, drawn: series.filter(p => (p.getAttribute("d") || "").length > 0).length,
      labels: [...svg.querySelectorAll(".finding-label")].map(t => t.textContent),
      findings: svg.querySelectorAll("g.finding").length,
      rules: [...new Set([...svg.querySelectorAll("g.finding")].map(g => g.dataset.rule))],
      xticks: [...svg.querySelectorAll("text.tick[text-anchor=middle]")].map(t => t.textContent),
    };
  });
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({errors: window.__errors, figures, height: document.body.scrollHeight});
  document.body.appendChild(out);
});
</script>"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("chromium is not installed: run dev/setup.sh --full (it installs Debian's chromium)")


def _browser(*args: str, url: str, height: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",  # tests run as root in CI
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={WINDOW_WIDTH},{height}",
            "--virtual-time-budget=5000",
            *args,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def look(report: Path, tmp_path: Path) -> tuple[dict[str, Any], Path]:
    """Render `report` in Chromium: the probe's findings from the DOM, and a full-page screenshot."""
    probe_page = tmp_path / f"{report.stem}-probe.html"
    probe_page.write_text(report.read_text().replace("<head>", "<head>" + PROBE, 1))
    dom = _browser("--dump-dom", url=probe_page.as_uri(), height=1200)
    assert dom.returncode == 0, dom.stderr
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.DOTALL)
    assert found, f"the probe did not run:\n{dom.stderr[-2000:]}"
    probe = json.loads(html.unescape(found.group(1)))
    png = tmp_path / f"{report.stem}.png"
    shot = _browser(f"--screenshot={png}", url=report.as_uri(), height=int(probe["height"]) + 40)
    assert shot.returncode == 0 and png.is_file(), shot.stderr
    return probe, png


def coloured_pixels(png: Path, box: dict[str, float]) -> int:
    """Pixels inside `box` whose colour is clearly not grey: the series, markers and labels drawn there."""
    import numpy as np
    from PIL import Image

    with Image.open(png) as img:
        rgb = np.asarray(img.convert("RGB"), dtype=np.int16)
    x0, y0 = int(box["x"]), int(box["y"])
    crop = rgb[y0 : y0 + int(box["height"]), x0 : x0 + int(box["width"])]
    return int(((crop.max(axis=2) - crop.min(axis=2)) > 60).sum())


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("reports")
    out = {}
    for name, script, expected in (("demo", "pytorch_diverging.py", 3), ("healthy", "pytorch_healthy.py", 0)):
        path = work / f"{name}.html"
        res = run_cli(["run", "--quiet", "--report", str(path), "--", *example(script)], cwd=work)
        assert res.returncode == expected, res.stderr[-3000:]
        out[name] = path
    return out


@pytest.mark.parametrize("name", ["demo", "healthy"])
def test_every_plot_is_rendered_with_its_series_and_no_error(
    name: str, reports: dict[str, Path], tmp_path: Path
) -> None:
    probe, png = look(reports[name], tmp_path)
    assert probe["errors"] == []
    figures = probe["figures"]
    assert {"plot-loss", "plot-grad_norm", "plot-weight_norm", "plot-update_ratio"} <= {
        f["id"] for f in figures
    }
    for f in figures:
        assert f["width"] > 400 and f["height"] > 100, f
        assert f["series"] >= 1 and f["drawn"] == f["series"], f
        assert coloured_pixels(png, f) > 300, f"{f['id']} looks empty in {png}"
        # Plots over steps start at step 0.
        assert not f["xticks"] or f["xticks"][0] == "0", f
    # A wide window holds two plots side by side.
    rows = {round(f["y"]) for f in figures}
    assert len(rows) < len(figures)


def test_the_demo_marks_each_finding_with_its_rule(reports: dict[str, Path], tmp_path: Path) -> None:
    probe, _ = look(reports["demo"], tmp_path)
    loss = next(f for f in probe["figures"] if f["id"] == "plot-loss")
    assert "exploding_tensor" in loss["labels"]
    # every rule with a marker on the plot is named, once, however many tensors it marks
    assert sorted(loss["labels"]) == sorted(loss["rules"]) and loss["findings"] >= len(loss["labels"])
    page = reports["demo"].read_text()
    banner = re.search(r'<div class="banner [^"]*">(.*?)</div>', page, re.DOTALL).group(1)
    assert banner.startswith("<b>Stopped by rule exploding_tensor</b>")


def test_the_healthy_run_lists_its_constant_learning_rate_instead_of_plotting_it(
    reports: dict[str, Path],
) -> None:
    page = reports["healthy"].read_text()
    assert re.search(r"<th>constant scalars</th><td>lr \(train\) = 0.1 at all \d+ steps", page)
    # the optimizer's group settings are one fact row (written where they change), never "constant at 1 step"
    assert re.search(r"<th>optimizer groups</th><td>0\.0 \(SGD, \d+ tensors\): [^<]*\blr 0\.1\b", page)
    assert "group/0.0/" not in page
    assert 'data-plot="metrics"' not in page
    assert "No warnings" in page
