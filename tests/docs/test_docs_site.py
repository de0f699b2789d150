"""The documentation site builds with `mkdocs build --strict` (no broken link or anchor, every page in
the nav), and the README and docs speak of the product: no links out of the repository, no notes
from how it was made. The alerts' runbook URLs point at this site's runbook pages.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md"))
NOT_FOR_USERS = [
    r"rules-science",
    r"§",
    r"\.\./shared|shared/DESIGN",
    r"\bsessions?\b",
    r"\blent\b",
    r"no GPU was",
    r"the issue's",
]
"""Phrases of internal notes and of how the project was built."""


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(ROOT / "mkdocs.yml"),
            "-d",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "WARNING" not in out.stderr, out.stderr
    assert (tmp_path / "runbooks" / "trainguardruletriggered" / "index.html").is_file()


@pytest.mark.parametrize("path", [ROOT / "README.md", *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_link_nothing_outside_the_repository_and_hold_no_internal_notes(path: Path) -> None:
    text = path.read_text()
    assert not re.search(r"\]\(\s*https?://|<https?://", text), f"{path.name} links outside the repository"
    for phrase in NOT_FOR_USERS:
        found = re.search(phrase, text)
        assert not found, f"{path.name}: {found.group(0)!r} is not about the product"


def test_the_readme_is_a_front_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / target).is_file(), f"README links {target}, which does not exist"


def test_runbook_urls_point_at_this_sites_runbook_pages() -> None:
    site = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["site_url"]
    values = yaml.safe_load((ROOT / "charts" / "trainguard" / "values.yaml").read_text())
    assert values["metrics"]["prometheusRule"]["runbookBaseUrl"] == site + "runbooks"
