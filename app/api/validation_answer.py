"""The 422 of a request that does not validate, its echo bounded.

FastAPI's own answer lists every error with the ``input`` it refused, whole: a 1.5 MB string in a name field came
back as a 1.5 MB answer, and a body with thousands of bad entries as thousands of errors. This answer
keeps the first :data:`MAX_ERRORS` errors (and says how many there were), each ``input`` cut to
:data:`MAX_ECHO_CHARS` characters of its JSON text and each ``loc`` part (a key the client chose) to
:data:`MAX_LOC_CHARS`; the ``loc`` and ``msg`` that name the field are kept.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

MAX_ERRORS, MAX_ECHO_CHARS, MAX_LOC_CHARS = 20, 200, 100


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def _echo(value: Any) -> Any:
    """``value`` if its JSON text is short, else that text cut (a string, marked as cut)."""
    if isinstance(value, str):
        return _cut(value, MAX_ECHO_CHARS)
    text = json.dumps(value, default=str)
    return value if len(text) <= MAX_ECHO_CHARS else _cut(text, MAX_ECHO_CHARS)


def bounded_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The errors as answered: at most :data:`MAX_ERRORS`, each echo and ``loc`` part cut (see the module)."""
    out = []
    for error in jsonable_encoder(errors[:MAX_ERRORS]):
        error["loc"] = [_cut(part, MAX_LOC_CHARS) if isinstance(part, str) else part for part in error.get("loc", [])]
        if "input" in error:
            error["input"] = _echo(error["input"])
        if "ctx" in error:
            error["ctx"] = {k: _echo(v) for k, v in error["ctx"].items()}
        out.append(error)
    if len(errors) > MAX_ERRORS:
        out.append({"loc": [], "type": "too_many_errors",
                    "msg": f"{len(errors) - MAX_ERRORS} more errors not shown ({len(errors)} in all)"})
    return out


async def validation_answer(request: Request, exc: RequestValidationError) -> JSONResponse:
    return JSONResponse({"detail": bounded_errors(list(exc.errors()))}, status_code=422)
