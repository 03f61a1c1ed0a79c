"""Helpers shared by the property modules: resolving a metric given by name, Measure or function."""

from __future__ import annotations

from typing import Callable, Union

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.measures import Measure, resolve_one
from meta_eval.measures.plugins import guarded
from meta_eval.model.rankings import Rankings

MetricLike = Union[str, Measure, Callable[[Rankings], np.ndarray]]


def as_metric(metric: MetricLike) -> tuple[str, Callable[[Rankings], np.ndarray]]:
    """(display name, function Rankings -> array) for a measure name, a Measure or a plain function."""
    if isinstance(metric, str):
        m = resolve_one(metric)
        return metric, m
    if isinstance(metric, Measure):
        return metric.output_name, metric
    if callable(metric):
        name = getattr(metric, "__name__", "metric")
        return name, guarded(metric, name)  # a user's function: read-only inputs, one finite value per list
    raise InputError(f"expected a measure name, a Measure or a function of Rankings, got {type(metric).__name__}")


def rankings_from(grade_lists, counts=None, rel_level: int = 1) -> Rankings:
    """A Rankings as given, or built from plain grade lists."""
    if isinstance(grade_lists, Rankings):
        return grade_lists
    return Rankings.from_lists(grade_lists, counts, rel_level=rel_level)


def rn_grades(text: str) -> list[int]:
    """``"RNRN"`` (or ``"1010"``) -> [1, 0, 1, 0]; spaces ignored."""
    text = text.replace(" ", "")
    table = {"R": 1, "N": 0, "1": 1, "0": 0}
    bad = sorted(set(text) - set(table))
    if bad:
        raise InputError(f"expected a string of R/N (or 1/0), got characters {bad} in {text!r}")
    return [table[c] for c in text]
