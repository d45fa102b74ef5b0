"""plotly.js as shipped inside the plotly package: served at /static and inlined in reports (no CDN)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import plotly

PLOTLY_JS_DIR = Path(plotly.__file__).resolve().parent / "package_data"


@lru_cache
def plotly_js() -> str:
    return (PLOTLY_JS_DIR / "plotly.min.js").read_text(encoding="utf-8")
