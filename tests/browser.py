"""Headless Chromium for the tests that read a rendered page (the HTML report, the docs site, the
MLflow UI): one command line, so each test names only what differs (its page, its waiting time,
whether other hosts are reachable)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no `chromium` binary to render the page (CI installs it: apt-get install chromium)",
)
BROWSER_TIMEOUT_S = 120


def chromium(
    url: str, profile: Path, *args: str, budget_ms: int = 5000, offline: bool = False
) -> subprocess.CompletedProcess[str]:
    """Chromium, headless with its own profile, on `url` after `budget_ms` of virtual time;
    `offline`: every host fails to resolve, so a page that asks for one shows it."""
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--virtual-time-budget={budget_ms}",
        *(["--host-resolver-rules=MAP * ~NOTFOUND"] if offline else []),
        *args,
        url,
    ]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S, check=True
    )
