"""A job chart saved with ``?format=html`` renders when opened from disk in Chromium with every network
request refused (plotly.js inlined), like the sweep report; ``&plotly=link`` is the small page that needs
the server."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


def test_saved_job_charts_render_from_disk_offline(web_stack, owner_key, succeeded_job, page, tmp_path):
    requests: list[str] = []
    page.context.route("http*://**/*", lambda route: (requests.append(route.request.url), route.abort()))
    with web_stack.client(owner_key) as client:
        for kind in ("trajectory", "scores"):
            html = client.get(f"/api/v1/jobs/{succeeded_job['id']}/charts/{kind}", params={"format": "html"})
            assert html.status_code == 200 and "/static/plotly.min.js" not in html.text
            saved = tmp_path / f"{kind}.html"
            saved.write_bytes(html.content)
            page.goto(saved.as_uri())
            page.wait_for_selector("#chart .main-svg")
            assert page.evaluate("document.getElementById('chart').data.length") >= 1
        linked = client.get(f"/api/v1/jobs/{succeeded_job['id']}/charts/scores",
                            params={"format": "html", "plotly": "link"})
        assert 'src="/static/plotly.min.js"' in linked.text and len(linked.content) < 500_000
    assert requests == []  # nothing was fetched: the pages are self-contained
