"""Figure JSON whose text shows exactly what the data says: no link or markup from a group value.

Plotly renders the text of a figure (trace names, titles, annotations, hover labels and the category
labels of an axis) through its own HTML subset: ``<a href>``, ``<b>``, ``<br>``, ``<span style>``, …
and the entities ``&lt;`` ``&gt;`` ``&amp;``. Group values, dataset and audit names and constraint
names come from users, so a group called ``<a href="https://evil">Male</a>`` drew a link in every
chart. :func:`figure_json` escapes ``&``, ``<`` and ``>`` as entities in every string a figure
displays; Plotly turns the entities back into the same characters, as plain text. Templates written
by us (``hovertemplate``, ``texttemplate``) are left as they are: they format values, which are
escaped where they are stored.
"""

from __future__ import annotations

import html
import json
from typing import Any

import plotly.graph_objects as go

DISPLAYED = frozenset({"name", "text", "hovertext", "title", "ticktext", "x", "y", "z", "theta", "labels",
                       "row_titles", "column_titles"})  # keys whose strings Plotly draws as text


SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "/": "\\u002f"})


def escape_label(text: str) -> str:
    """``text`` with ``&``, ``<`` and ``>`` as HTML entities (Plotly shows them as those characters)."""
    return html.escape(text, quote=False)


def _escaped(value: Any, displayed: bool) -> Any:
    if isinstance(value, str):
        return escape_label(value) if displayed else value
    if isinstance(value, dict):
        return {k: _escaped(v, k in DISPLAYED) for k, v in value.items()}
    if isinstance(value, list) and value and isinstance(value[0], (str, list, dict)):
        return [_escaped(v, displayed) for v in value]
    return value  # numbers, and lists of numbers (left without a walk: trajectories hold thousands)


def figure_json(fig: go.Figure) -> str:
    """``fig.to_json()`` with every displayed string escaped (see the module docstring); the layout's
    ``template`` (ours, from Plotly) is kept as it is."""
    figure = json.loads(fig.to_json())
    layout = figure.get("layout", {})
    template = layout.pop("template", None)
    figure = _escaped(figure, False)
    if template is not None:
        figure["layout"]["template"] = template
    # as Plotly's own to_json: <, > and / as JSON escapes, so the text is safe inside a <script> element
    return json.dumps(figure, separators=(",", ":")).translate(SCRIPT_SAFE)
