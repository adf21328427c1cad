"""Sphinx configuration of the tune_app docs site (MyST Markdown, the furo theme).

The site must work offline: furo bundles its scripts, styles and icons and uses the system's
fonts, and nothing here adds a resource from another host (a test scans the built pages).
"""

from __future__ import annotations

project = "tune_app"
author = "tune_app contributors"
copyright = "tune_app contributors"

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md"]

# `[text](page.md#a-heading)` links resolve to headings down to this level.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# Every reference must resolve: with -W a broken one fails the build.
nitpicky = True

html_theme = "furo"
html_title = "tune_app"
html_static_path = ["_static"]
# No "view source" links to a hosted repository, and no search index fetched from elsewhere.
html_show_sourcelink = False
html_copy_source = False
