"""`pytest -q` must say why tests skip (the README promises a message for missing chromium)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quiet_run_lists_skip_reasons(tmp_path):
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import pytest\n\n"
        "@pytest.mark.skip(reason='chromium is missing: probe reason')\n"
        "def test_skipped():\n    pass\n",
        "utf-8",
    )
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-c", str(ROOT / "pyproject.toml"),
         "--rootdir", str(tmp_path), "-p", "no:cacheprovider", str(probe)],
        capture_output=True, text=True, cwd=tmp_path,
    ).stdout
    assert "SKIPPED" in out and "chromium is missing: probe reason" in out
    assert "-q -rs" in (ROOT / "scripts" / "test").read_text("utf-8")
