"""What the readers return: one table per file (a run, qrels, preference judgments, reference z-scores), the
columns as Arrow arrays (strings) and numpy arrays (numbers), and the largest grade a collection may hold.

Here, apart from the readers (:mod:`meta_eval.inputs.trec` for TREC files, :mod:`meta_eval.inputs.adapters` for
data frames and other objects), so that both build the same tables without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

MAX_GRADE = 127
"""The highest relevance grade a collection may hold: grades are stored as int8 (with the negative codes of
:mod:`meta_eval.model.rankings`), which keeps the arrays small; higher grades are refused when the qrels are read."""


@dataclass(frozen=True)
class RunTable:
    """One parsed run: per retrieved document its topic, docid, score and (optional) rank, in file order.

    Attributes
    ----------
    name : str
        Run name: the tag column of the last line (trec_eval's ``runid``), or the name given.
    source : str
        File name (or DataFrame label) for error messages.
    topic, docid : pyarrow.Array
        Strings, plain (as ``read_run`` parses them) or dictionary-encoded; a dictionary's entries must be
        distinct.
    score : numpy.ndarray
        float64 scores.
    rank : numpy.ndarray or None
        The rank column as float64, when asked for (``ties="rank"``); otherwise None.
    """

    name: str
    source: str
    topic: pa.Array
    docid: pa.Array
    score: np.ndarray
    rank: np.ndarray | None = None


@dataclass(frozen=True)
class QrelsTable:
    """Parsed qrels: topic, docid and integer grade per judgment; with judgment groups (trec_eval's ``qrels_jg``
    format, :func:`read_qrels_jg`) also the group of each judgment (the second field), else None."""

    source: str
    topic: pa.Array
    docid: pa.Array
    grade: np.ndarray
    group: pa.Array | None = None


@dataclass(frozen=True)
class PrefsTable:
    """Parsed preference judgments (trec_eval's ``prefs`` and ``qrels_prefs`` formats, :func:`read_prefs`): per
    line the topic, judgment group (one user's information need), judgment sub-group (a set of documents ranked
    against each other), docid and relevance level (a float; within a sub-group a higher level is preferred, 0 means
    not relevant)."""

    source: str
    topic: pa.Array
    group: pa.Array
    subgroup: pa.Array
    docid: pa.Array
    level: np.ndarray


@dataclass(frozen=True)
class ZScoresTable:
    """Parsed reference means and standard deviations per (topic, measure) (trec_eval's ``-Z`` file,
    :func:`read_zscores`)."""

    source: str
    topic: list[str]
    measure: list[str]
    mean: np.ndarray
    sd: np.ndarray
