"""The docs site builds with warnings as errors, works offline, and renders: the landing page and
a tutorial, opened from disk in headless Chromium with every other host unreachable, show their
navigation and code blocks in the DOM the browser built (furo's script sets the body's theme,
which the HTML files do not hold), and no page asks for a script, style, font or image from
outside the site."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from .browser import chromium, needs_chromium
from .conftest import ROOT
from .test_report import Dom, parse

EXTERNAL = re.compile(r"^(https?:)?//", re.I)
CSS_URL = re.compile(r"""(?:url\(\s*['"]?|@import\s+['"])(?P<url>[^'")\s]+)""", re.I)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site as README's build command makes it (warnings as errors), in a fresh folder."""
    out = tmp_path_factory.mktemp("site")
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    done = subprocess.run(
        [*command, str(ROOT / "docs"), str(out)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return out


def resources(dom: Dom) -> list[str]:
    """What a page makes the browser load: scripts, styles, icons, fonts, images, frames."""
    found = [
        a.get("src", "") for tag in ("script", "img", "iframe", "source") for a in dom.all(tag)
    ]
    found += [a.get("href", "") for a in dom.all("link")]  # stylesheets, preloads, icons
    return [url for url in found if url]


def test_no_page_asks_for_a_resource_outside_the_site(site):
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 20
    outside = {}
    for page in pages:
        urls = [u for u in resources(parse(page.read_text())) if EXTERNAL.match(u)]
        if urls:
            outside[str(page.relative_to(site))] = urls
    for sheet in site.rglob("*.css"):
        urls = [m["url"] for m in CSS_URL.finditer(sheet.read_text()) if EXTERNAL.match(m["url"])]
        if urls:
            outside[str(sheet.relative_to(site))] = urls
    assert not outside, outside


def test_every_local_resource_a_page_asks_for_is_in_the_site(site):
    missing = set()
    for page in site.rglob("*.html"):
        for url in resources(parse(page.read_text())):
            path = url.split("#")[0].split("?")[0]
            if path and not EXTERNAL.match(path) and not (page.parent / path).exists():
                missing.add(f"{page.relative_to(site)}: {url}")
    assert not missing, sorted(missing)


def rendered(page: Path, profile: Path) -> Dom:
    """The DOM of `page` after Chromium loaded it from disk, with no other host reachable."""
    return parse(
        chromium(page.as_uri(), profile, "--dump-dom", budget_ms=3000, offline=True).stdout
    )


@needs_chromium
@pytest.mark.parametrize(
    ("page", "title"),
    [("index.html", "tune_app"), ("tutorials/first-search.html", "Your first search")],
)
def test_pages_render_with_navigation_and_code_blocks(site, tmp_path, page, title):
    dom = rendered(site / page, tmp_path / "profile")
    (body,) = dom.all("body")
    assert body.get("data-theme") == "auto", body  # set by furo's script: it ran, offline
    assert title in dom.joined()
    # The navigation: the sidebar's tree links every tutorial and the generated reference.
    links = {a.get("href", "").rsplit("/", 1)[-1] for a in dom.all("a")}
    wanted = {"first-search.html", "rllib.html", "spec.html", "cli.html"} - {Path(page).name}
    assert wanted <= links, links
    assert [a for a in dom.all("div") if "sidebar-tree" in a.get("class", "")] or [
        a for a in dom.all("nav") if "sidebar-tree" in a.get("class", "")
    ]
    blocks = [a for a in dom.all("div") if "highlight" in a.get("class", "").split()]
    assert blocks, "no highlighted code block"
