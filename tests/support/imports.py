"""What a piece of code imports, run in a fresh interpreter (the API and the catalog must load no heavy package)."""

from __future__ import annotations

import json
import subprocess
import sys

from bench.common.stack import ROOT

HEAVY = ("torch", "scipy", "sklearn")


def imported_after(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; which of the heavy packages it imported, and what it printed."""
    probe = f"import sys, json\n{code}\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=True)
    *printed, last = out.stdout.strip().splitlines()
    return {"heavy": [m for m, loaded in json.loads(last).items() if loaded], "printed": printed}
