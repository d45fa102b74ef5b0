"""Non-finite numbers and huge integers in JSON bodies: refused where the body is parsed, with a 422 that names
the field and does not echo the value; every route that takes a JSON body parses it strictly."""

from __future__ import annotations

import json

import pytest
from fastapi.routing import APIRoute

from app.core.strict_json import NonFinite, StrictJSONRoute, first_non_finite, strict_loads


@pytest.mark.parametrize("text, loc", [
    ('{"a": NaN}', ["a"]), ('{"a": [1, Infinity]}', ["a", 1]), ('{"a": {"b": -Infinity}}', ["a", "b"]),
    ('{"x": 1, "a": 1e999}', ["a"]), ('[-1e400]', [0]), ('{"a": ' + "9" * 41 + "}", ["a"]),
])
def test_non_finite_numbers_are_refused_and_located(text, loc):
    with pytest.raises(NonFinite):
        strict_loads(text)
    assert first_non_finite(text) == loc


def test_finite_json_reads_as_usual():
    text = '{"a": [1, 2.5, -1e300, "NaN", null, true], "b": ' + "9" * 40 + "}"
    assert strict_loads(text) == json.loads(text)


def api_routes(routes) -> list[APIRoute]:
    """The app's API routes, those of included routers too."""
    out = []
    for route in routes:
        if isinstance(route, APIRoute):
            out.append(route)
        elif hasattr(route, "original_router"):
            out += api_routes(route.original_router.routes)
    return out


def test_every_route_with_a_json_body_parses_it_strictly():
    from fastapi.params import File, Form

    from app.main import app

    json_routes = [r for r in api_routes(app.routes) if r.body_field is not None
                   and not isinstance(r.body_field.field_info, (Form, File))]
    assert len(json_routes) >= 4  # jobs, sweeps, audits, keys ...
    lax = [f"{sorted(r.methods)} {r.path}" for r in json_routes if not isinstance(r, StrictJSONRoute)]
    assert lax == []
