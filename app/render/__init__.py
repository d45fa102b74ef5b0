"""What people read: charts (Plotly figure JSON), the HTML templates and the static assets inlined into pages."""

from pathlib import Path

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
