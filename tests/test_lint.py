"""ruff (pinned in requirements-dev.txt, configured in pyproject.toml) finds no pyflakes error in the tree."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_no_pyflakes_errors():
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--select", "F", "--output-format", "concise", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "No module named ruff" not in out.stderr, "ruff is not installed: pip install -r requirements-dev.txt"
    assert out.returncode == 0, f"ruff check --select F:\n{out.stdout}{out.stderr}"
