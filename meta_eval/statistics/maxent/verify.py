"""Checking an expected-value form against the metric itself: lists to verify on, and the largest residual.

A form is only used after it reproduces the metric at the point mass of every verification list (a sample of the
actual lists, and random lists with the same lengths and counts): :mod:`meta_eval.statistics.maxent.forms` (declared and derived
forms), :mod:`meta_eval.statistics.maxent.prefix_state` and :mod:`meta_eval.statistics.maxent.groups` (which lists may share a form).
"""

from __future__ import annotations

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.statistics.maxent.batch import ListBatch
from meta_eval.statistics.maxent.expectations import ExpectationForm


def score_batch(measure, batch: ListBatch, rel_level: int = 1) -> np.ndarray:
    """A core measure on the lists of a batch (grades 0..c; padding past each list's end)."""
    from meta_eval.model.rankings import PAD, Rankings

    grades = np.where(batch.mask, batch.grades, PAD).astype(np.int8)
    r = Rankings(grades, batch.lengths, batch.counts, rel_level=rel_level)
    return np.broadcast_to(np.asarray(measure(r), dtype=np.float64), (batch.n_lists,)).copy()


def verification_batch(batch: ListBatch, seed: int, per_group: int = 2, max_groups: int | None = 64,
                        max_actual: int = 256) -> ListBatch:
    """Lists to verify a form on: a sample of the actual lists, and for (a sample of) the distinct (length,
    counts) groups random lists with the same length and counts: uniform grades, and the group's first list
    shuffled, ``per_group`` of each. A derived form is checked on every group (``max_groups=None``); a declared
    form, the same code for every group, on a sample."""
    rng = np.random.default_rng(seed)
    keys = np.column_stack([batch.lengths, batch.counts])
    _, first = np.unique(keys, axis=0, return_index=True)
    if max_groups is not None and first.size > max_groups:
        first = np.sort(rng.choice(first, max_groups, replace=False))
    actual = np.arange(batch.n_lists)
    if actual.size > max_actual:
        actual = np.sort(rng.choice(actual, max_actual, replace=False))
    pick = np.repeat(first, per_group)
    K = batch.n_grades
    uniform = rng.integers(0, K, size=(pick.size, batch.depth))
    # shuffle only inside each list: sort random keys with padding pushed to the end
    keys_ = rng.random((pick.size, batch.depth)) + (np.arange(batch.depth)[None, :] >= batch.lengths[pick, None])
    shuffled = np.take_along_axis(batch.grades[pick], keys_.argsort(1), axis=1)
    grades = np.concatenate([batch.grades[actual], uniform, shuffled])
    lengths = np.concatenate([batch.lengths[actual], batch.lengths[pick], batch.lengths[pick]])
    counts = np.concatenate([batch.counts[actual], batch.counts[pick], batch.counts[pick]])
    return ListBatch(np.where(np.arange(batch.depth)[None, :] < lengths[:, None], grades, 0), lengths, counts)


def form_residual(form: ExpectationForm, measure, batch: ListBatch, rel_level: int) -> float:
    """max |E_form[M] - M| over the point masses of ``batch``, relative to the metric's scale."""
    try:
        ours = np.asarray(form.value(batch.onehot()), dtype=float)
    except InputError:
        return np.inf
    truth = score_batch(measure, batch, rel_level)
    both = np.isfinite(truth) & np.isfinite(ours)
    if not np.array_equal(np.isfinite(truth), np.isfinite(ours)):
        # undefined for the form but not for the metric (or the reverse): e.g. a form dividing by R = 0
        return np.inf if (np.isfinite(truth) & ~np.isfinite(ours) & (truth != 0)).any() else scaled(
            ours[both], truth[both])
    return scaled(ours[both], truth[both])


def scaled(a: np.ndarray, b: np.ndarray) -> float:
    if a.size == 0:
        return 0.0
    scale = max(1.0, float(np.abs(b).max()))
    return float(np.abs(a - b).max() / scale)
