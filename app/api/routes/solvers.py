"""Solver and constraint catalogues, generated from the solver library's registries."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from app.api.deps import current_caller

from solvers import list_constraints, list_solvers

router = APIRouter(prefix="/api/v1", tags=["solvers"], dependencies=[Depends(current_caller)])


@router.get("/solvers")
def solvers() -> list[dict]:
    """Every solver: name, aliases, paper, description, supported models/constraints, config JSON schema."""
    return list_solvers()


@router.get("/constraints")
def constraints() -> list[dict]:
    """Every constraint family with its fields' JSON schema."""
    return list_constraints()
