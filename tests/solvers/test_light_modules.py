"""The torch-free corner of solvers (docs/architecture.md, "solvers/ layout"): the API process validates specs,
checks audit model files and computes audit metrics with these modules and never loads torch."""
import subprocess
import sys

import pytest

LIGHT = ["solvers", "solvers.catalog", "solvers.data.spec", "solvers.formats.model_file", "solvers.formats.strict_json",
         "solvers.metrics.auc", "solvers.metrics.partial", "solvers.metrics.percentile_intervals",
         "solvers.metrics.bootstrap"]


@pytest.mark.parametrize("module", LIGHT)
def test_loads_no_torch(module):
    code = f"import sys, {module}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


def test_a_torch_module_is_told_apart():
    code = "import sys, solvers.models.factory; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "True"
