"""The one iteration loop shared by every algorithm.

Per iteration: ``algorithm.step`` → ONE host sync (``tolist`` of objective,
constraints and duals concatenated) → ``observer.on_iteration`` →
``observer.should_stop`` → time-limit check. The first iterate with a non-finite objective, constraint,
multiplier or parameter ends the run (status ``"diverged"``, :mod:`.divergence`) before the observer sees it.
Every few iterations (``observer.exact_trace_every``) the record also carries the exact constraint values on
train and validation (:mod:`solvers.fairness.exact_trace`). The algorithm learns the budget as
``algorithm.horizon`` before ``start``, and ``algorithm.deadline`` (the loop's start + ``time_limit_s``) for
work after the loop. When ``observer.checkpoint_due()``, the observer is
handed the run's whole state (:mod:`solvers.formats.checkpoint`); ``resume`` restarts from such a
checkpoint, continuing its iteration count, samples seen and solver time. After the loop ``algorithm.finish()`` may swap in the
paper's output point (random/averaged iterate), and the result's ``last`` record then describes it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import time

import torch
from torch import nn

from ..formats import checkpoint as ckpt
from ..fairness.exact_trace import ExactTracer
from ..observer import IterationRecord, Observer
from ..problem import Problem
from .base import Algorithm, AlgorithmConfig, SolveResult
from .divergence import divergence_message, non_finite_part
from .parameter_buffer import ParameterBuffer, one_buffer, parameter_sum


def run_algorithm(
    algorithm_cls: type[Algorithm],
    problem: Problem,
    config: AlgorithmConfig,
    observer: Observer | None = None,
    *,
    max_iterations: int = 2000,
    time_limit_s: float = 600.0,
    seed: int = 0,
    model: nn.Module | None = None,
    validation: Problem | None = None,
    resume: ckpt.Checkpoint | None = None,
) -> SolveResult:
    """Build the model (seeded) and iterate until ``max_iterations``, a stop request or the time limit.

    ``model``: optional warm start (used in place, moved to the problem's device).
    ``validation``: optional held-out Problem, given to the algorithm as ``algorithm.validation``.
    ``resume``: a checkpoint of this same run to continue from (iteration ``resume.iteration + 1`` on).
    """
    observer = observer or Observer()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = problem.make_model() if model is None else model.to(problem.device)
    algorithm = algorithm_cls.for_model(problem.model_type)(problem, config, model, seed=seed)
    algorithm.horizon = max_iterations
    algorithm.validation = validation
    names = problem.constraint_names
    observer.on_start({
        "max_iterations": max_iterations,
        "constraint_names": names,
        "device": problem.device.type,
        "n_train": problem.n_samples,
        "n_features": problem.n_features,
        "groups": list(problem.group_names),
    })

    tracer = ExactTracer.for_problem(problem, validation, observer.exact_trace_every(), max_iterations)
    with torch.set_grad_enabled(algorithm.needs_autograd), \
            one_buffer(_parameters(algorithm, model), enabled=not algorithm.needs_autograd) as buffer:
        return _iterate(algorithm, problem, model, observer, max_iterations, time_limit_s, resume, tracer, buffer)


def _parameters(algorithm: Algorithm, model: nn.Module) -> list[torch.Tensor]:
    """The tensors whose sum the divergence check reads: the algorithm's ``params`` (which ``start`` may extend, e.g.
    with auxiliary variables), else the model's."""
    return getattr(algorithm, "params", None) or list(model.parameters())


def _iterate(algorithm: Algorithm, problem: Problem, model: nn.Module, observer: Observer, max_iterations: int,
             time_limit_s: float, resume: ckpt.Checkpoint | None, tracer: ExactTracer | None,
             buffer: ParameterBuffer | None) -> SolveResult:
    """The loop; ``buffer``: the parameters in one buffer (:mod:`.parameter_buffer`), used while it holds them all."""
    t0 = time.perf_counter()
    current = algorithm.evaluate()
    algorithm.start(current)
    status, stop_reason, record, seen, k, first, message = "completed", None, None, 0, 0, 0, None
    if resume is not None:
        ckpt.restore(algorithm, resume)
        with torch.enable_grad():  # a plain evaluation: the step differentiates its graph
            current = problem.evaluate(algorithm.model, getattr(algorithm, "last_batch", None))
        t0, seen, first = time.perf_counter() - resume.elapsed_s, resume.samples_seen, resume.iteration
    algorithm.deadline = t0 + time_limit_s   # what finish() may still spend (the threshold MIP)
    names = problem.constraint_names
    m, params = len(names), _parameters(algorithm, model)  # (after start: it may add parameters)
    no_grad = torch.no_grad if torch.is_grad_enabled() else contextlib.nullcontext  # (off already: score space)
    for k in range(first, max_iterations):
        current, duals = algorithm.step(k, current)
        with no_grad():
            flat = torch.cat([current.objective.reshape(1), _flat(current.constraints),  # cat promotes dtypes
                              *[_flat(d) for d in (duals or {}).values()],
                              parameter_sum(params, buffer)]).tolist()  # the one host sync
        bad = None if all(map(math.isfinite, flat)) else \
            non_finite_part(flat, names, [key for key, d in (duals or {}).items() for _ in range(d.numel())])
        if bad is not None:  # iterate k + 1 is not finite: stop at the last finite one
            status, stop_reason = "diverged", "diverged"
            message = divergence_message(algorithm.name, k + 1, bad, algorithm.config)
            break
        seen += algorithm.samples_per_step()
        constraints = flat[1:1 + m]
        dual_lists, offset = None, 1 + m
        if duals is not None:
            dual_lists = {}
            for key, value in duals.items():
                dual_lists[key] = flat[offset:offset + value.numel()]
                offset += value.numel()
        elapsed = time.perf_counter() - t0
        record = IterationRecord(
            iteration=k + 1, elapsed_s=elapsed, samples_seen=seen, objective=flat[0],
            constraints=constraints, max_violation=max([0.0, *constraints]), duals=dual_lists,
            exact=tracer(algorithm.model) if tracer is not None and tracer.due(k + 1, elapsed) else None,
        )
        observer.on_iteration(record)
        if observer.checkpoint_due():
            observer.on_checkpoint(ckpt.capture(algorithm, k + 1, seen, elapsed))
        reason = observer.should_stop()
        if reason is None and elapsed >= time_limit_s and k + 1 < max_iterations:
            reason = "time_limit"
        if reason is not None:
            status, stop_reason = "stopped", str(reason)
            break
        if algorithm.converged:  # the algorithm's own stopping rule
            break
    final = algorithm.finish() if status != "diverged" else None  # the output rule's point, if not the last
    if final is not None and record is not None:
        values = torch.cat([final.objective.detach().reshape(1), final.constraints.detach().reshape(-1)]).tolist()
        record = dataclasses.replace(record, objective=values[0], constraints=values[1:],
                                     max_violation=max([0.0, *values[1:]]))
    model = algorithm.model  # the algorithm's output: the model it was given, or one it built (reductions' Q)
    model.eval()
    return SolveResult(
        model=model, status=status, stop_reason=stop_reason, iterations=record.iteration if record else first,
        solver_time_s=time.perf_counter() - t0, samples_seen=seen, last=record, config=algorithm.config,
        message=message,
    )


def _flat(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor.reshape(-1)`` (skipped for a vector: the call costs as much as the copy it avoids)."""
    return tensor if tensor.ndim == 1 else tensor.reshape(-1)
