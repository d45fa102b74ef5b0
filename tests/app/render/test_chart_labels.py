"""figure_json: every string Plotly draws is escaped, our templates and the click data are not (issue 19 #13)."""
from __future__ import annotations

import json

import plotly.graph_objects as go

from app.render.charts.labels import figure_json

EVIL = '<a href="https://evil.example/">x</a> & co'
SAFE = '&lt;a href="https://evil.example/"&gt;x&lt;/a&gt; &amp; co'


def test_displayed_strings_are_escaped_and_the_rest_kept():
    fig = go.Figure(go.Bar(x=[EVIL, "b"], y=[1.0, 2.0], name=EVIL, customdata=[["job-1", EVIL]],
                           hovertemplate="%{x}<br>%{y}<extra></extra>"))
    fig.update_layout(title=EVIL, xaxis_title=EVIL, template="plotly_white",
                      annotations=[{"text": EVIL, "x": 0, "y": 0}])
    text = figure_json(fig)
    assert "</" not in text and "<" not in text  # safe inside a <script> element, as Plotly's own to_json
    out = json.loads(text)
    bar = out["data"][0]
    assert bar["name"] == SAFE and bar["x"] == [SAFE, "b"] and bar["y"] == [1.0, 2.0]
    assert bar["customdata"] == [["job-1", EVIL]] and bar["hovertemplate"] == "%{x}<br>%{y}<extra></extra>"
    layout = out["layout"]
    assert layout["title"]["text"] == layout["xaxis"]["title"]["text"] == layout["annotations"][0]["text"] == SAFE
    assert layout["template"] == json.loads(fig.to_json())["layout"]["template"]
