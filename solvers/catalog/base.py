"""The two catalogs and the Config bases every solver and constraint type derives from.

A Config is the pydantic model of a solver's ``params`` or of a constraint spec's extra
fields: defaults from the paper, every field described, unknown fields are errors.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from .registry import Catalog, Entry

# overlapping_groups: the solver sees the groups only through the constraint families' G(θ) (and its mini-batches
# through FairnessData.subset), so it takes a spec's overlapping groups and per-group rate rows (reference "overall").
# keeps_exact: the solver's output keeps the exact constraint by construction on its selection split (post-processing
# chosen by the exact rates): ``run`` then skips the exact enforcement that continues surrogate solvers.
ALGORITHMS: Catalog = Catalog("solver", paper="", description="", supported_models=("linear", "mlp"),
                              supported_constraints=None,  # None: every constraint type
                              constraint_count=(0, None),  # (fewest, most) constraints of a spec; None: no limit
                              keeps_exact=False, overlapping_groups=False)
# max_tolerance: the largest gap the type's metric can take (rates and shares: 1); a tolerance above it could never
# bind and is refused. None: unbounded (loss gaps).
CONSTRAINTS: Catalog = Catalog("constraint type", description="", max_tolerance=None)

Surrogate = Literal["sigmoid", "hinge", "clipped_linear"]


class AlgorithmConfig(BaseModel):
    """Base of every algorithm's Config: unknown parameters are errors."""

    model_config = ConfigDict(extra="forbid")

    batch_size: PositiveInt | None = Field(
        None, description="Samples per stochastic step (uniform without replacement within an epoch). "
        "None = full batch, the deterministic setting of the paper's analysis.")


class ConstraintConfig(BaseModel):
    """Family-specific fields of a constraint spec (extra fields are errors)."""

    model_config = ConfigDict(extra="forbid")

    surrogate: Surrogate = Field(
        "sigmoid",
        description="Smooth stand-in σ for the indicator 1{f>0}: 'sigmoid' (paper eq. 15), "
        "'hinge' ([1+f]^+), or 'clipped_linear' (ramp clamp((1+f)/2, 0, 1)).",
    )


class RateConfig(ConstraintConfig):
    """Fields of the rate families (DP, equal opportunity, equalized odds, minority rate): the surrogate
    and its temperature."""

    temperature: float = Field(
        1.0, gt=0.0, le=100.0,
        description="Temperature T of the surrogate: σ is applied to f/T. T < 1 brings it closer to the "
        "indicator 1{f>0} (auto lowers it when the exact rate does not follow the surrogate); 1 = the paper's.")


def describe_solver(entry: Entry) -> dict[str, Any]:
    """A solver as served by ``GET /solvers``."""
    constraints = entry.supported_constraints or CONSTRAINTS.names()
    return {
        "name": entry.name,
        "aliases": list(entry.aliases),
        "paper": entry.paper,
        "description": entry.description,
        "supports": {"models": list(entry.supported_models), "constraints": list(constraints),
                     "overlapping_groups": bool(entry.overlapping_groups)},
        "config_schema": entry.Config.model_json_schema(),
    }


def describe_constraint(entry: Entry) -> dict[str, Any]:
    """A constraint type as served by ``GET /constraints``."""
    return {"type": entry.name, "aliases": list(entry.aliases), "description": entry.description,
            "max_tolerance": entry.max_tolerance, "config_schema": entry.Config.model_json_schema()}


def list_solvers() -> list[dict[str, Any]]:
    """Every declared solver: name, aliases, paper, description, supports, config_schema."""
    return [describe_solver(entry) for entry in ALGORITHMS.entries()]


def list_constraints() -> list[dict[str, Any]]:
    """Every declared constraint type: type, aliases, description, config_schema."""
    return [describe_constraint(entry) for entry in CONSTRAINTS.entries()]
