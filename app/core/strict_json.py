"""Strict JSON: request bodies with a non-finite number are refused where they are parsed.

Python's ``json`` reads ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON at all) and turns ``1e999``
into ``inf``. Such a value then breaks what follows: a 422 that echoes it cannot itself be encoded as
JSON, PostgreSQL's JSONB refuses to store it, SQLite's JSON silently drops it. :func:`strict_loads`
refuses each of them, and integers of more than :data:`MAX_INT_DIGITS` digits (no field of this API
needs one; Python would spend quadratic time converting a longer one). :class:`StrictJSONRoute` makes
FastAPI parse bodies with it: the answer is a 422 whose ``loc`` names the field, and it never echoes
the value.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute

MAX_INT_DIGITS = 40
MESSAGE = "numbers must be finite (no NaN, Infinity or overflowing values like 1e999)"


class NonFinite(ValueError):
    """A number that JSON cannot carry or this API does not take."""


def _refuse(text: str) -> Any:
    raise NonFinite(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NonFinite(text)
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise NonFinite(text)
    return int(text)


def strict_loads(data: bytes | str) -> Any:
    """``json.loads`` that raises :class:`NonFinite` for NaN, ±Infinity, a float that overflows, or a huge int."""
    return json.loads(data, parse_constant=_refuse, parse_float=_finite_float, parse_int=_bounded_int)


def first_non_finite(data: bytes | str) -> list[str | int]:
    """The location of the first offending number (read leniently; used only to word a refusal)."""
    doc = json.loads(data, parse_int=lambda s: math.inf if len(s.lstrip("-")) > MAX_INT_DIGITS else int(s))
    stack: list[tuple[list[str | int], Any]] = [([], doc)]
    while stack:
        loc, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return loc
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        stack.extend((loc + [k], v) for k, v in reversed(list(items)))
    return []


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
