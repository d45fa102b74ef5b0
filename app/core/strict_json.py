"""Strict JSON: request bodies with a non-finite number are refused where they are parsed.

Python's ``json`` reads ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON at all) and turns ``1e999``
into ``inf``. Such a value then breaks what follows: a 422 that echoes it cannot itself be encoded as
JSON, PostgreSQL's JSONB refuses to store it, SQLite's JSON silently drops it. :func:`strict_loads`
refuses each of them, and integers of more than ``MAX_INT_DIGITS`` digits (no field of this API
needs one; :mod:`solvers.formats.strict_json`, shared with the audit model file). :class:`StrictJSONRoute` makes
FastAPI parse bodies with it: the answer is a 422 whose ``loc`` names the field, and it never echoes
the value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute

from solvers.formats.strict_json import NonFinite, first_non_finite, strict_loads

MESSAGE = "numbers must be finite (no NaN, Infinity or overflowing values like 1e999)"


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = strict_loads(body)
            except NonFinite as exc:
                raise HTTPException(status_code=422, detail=[{
                    "type": "finite_number", "loc": ["body", *first_non_finite(body)], "msg": MESSAGE}]) from exc
        return self._json


class StrictJSONRoute(APIRoute):
    """An API route whose JSON body is read by :func:`strict_loads`; every router with JSON bodies uses it."""

    def get_route_handler(self) -> Callable:
        handler = super().get_route_handler()

        async def run(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return run
