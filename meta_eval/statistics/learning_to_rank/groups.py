"""Query groups as padded blocks, and a model's rankings as meta-eval :class:`~meta_eval.model.rankings.Rankings`.

Queries are sorted by size and cut into blocks whose padded ``(B, n, n)`` pair arrays stay under a cell budget, so
that every per-pair computation (swap deltas, lambdas) is one numpy expression per block with little padding.

Convention (stated once, used everywhere): the "qrels" of a query are its labelled documents, so the ideal list
and R_i come from the query's labels; a query's documents are ranked by descending model score, ties kept in file
order (LightGBM's convention, by a stable sort).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meta_eval.model.rankings import PAD, Rankings

__all__ = ["Block", "blocks", "query_counts", "ranked_rankings"]

#: Cells of one block's (B, n, n) pair arrays: bounds the memory of the swap deltas and lambdas (~8 bytes each).
PAIR_CELLS = 2_000_000


@dataclass(eq=False)
class Block:
    """Queries of similar size, padded to ``width`` documents.

    Attributes
    ----------
    queries : ndarray (B,)
        Indices of the queries (into the set's query list).
    rows : ndarray (B, width)
        Row of each document in the set (0 where padded).
    valid : ndarray of bool (B, width)
        The slot holds a document.
    """

    queries: np.ndarray
    rows: np.ndarray
    valid: np.ndarray

    @property
    def width(self) -> int:
        return self.rows.shape[1]


def blocks(bounds: np.ndarray, cells: int = PAIR_CELLS, ratio: float = 1.5) -> list[Block]:
    """Cut the queries of ``bounds`` into blocks: sorted by size, at most ``cells`` pair cells (B·n²) a block and
    sizes within ``ratio`` of the block's smallest (a query too big for the budget is a block of its own)."""
    sizes = np.diff(bounds)
    order = np.argsort(sizes, kind="stable")
    out: list[list[int]] = []
    for q in order:
        n = int(sizes[q])
        if out and (len(out[-1]) + 1) * n * n <= cells and n <= ratio * max(1, sizes[out[-1][0]]):
            out[-1].append(int(q))
        else:
            out.append([int(q)])
    result = []
    for members in out:
        members = np.asarray(members, dtype=np.int64)
        width = max(1, int(sizes[members].max()))
        offs = np.arange(width)
        valid = offs[None, :] < sizes[members][:, None]
        rows = np.where(valid, bounds[members][:, None] + offs[None, :], 0)
        result.append(Block(members, rows, valid))
    return result


def query_counts(y: np.ndarray, bounds: np.ndarray, max_label: int) -> np.ndarray:
    """Documents per label of every query, ``(Q, max_label + 1)``: the R_i of the query's "qrels"."""
    q = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
    width = max_label + 1
    return np.bincount(q * width + y, minlength=(len(bounds) - 1) * width).reshape(-1, width)


def ranked_rankings(scores: np.ndarray, y: np.ndarray, bounds: np.ndarray, max_label: int,
                    rel_level: int = 1) -> Rankings:
    """Every query's documents ranked by descending score, as one :class:`Rankings` (one list per query).

    Parameters
    ----------
    scores : ndarray (N,)
        Model scores of the rows.
    y : ndarray (N,)
        Labels of the rows.
    bounds : ndarray (Q + 1,)
        Query boundaries.
    max_label : int
        The grade scale 0..max_label of the data set (GAP's default g is uniform over 1..max_label).
    rel_level : int
        Binary relevance threshold of binary measures.
    """
    sizes = np.diff(bounds)
    n_q = len(sizes)
    query = np.repeat(np.arange(n_q), sizes)
    order = np.lexsort((-np.asarray(scores, dtype=np.float64), query))  # stable: ties keep file order
    width = max(1, int(sizes.max(initial=1)))
    grades = np.full((n_q, width), PAD, dtype=np.int16)
    position = np.arange(len(y)) - np.repeat(bounds[:-1], sizes)
    grades[query, position] = y[order]
    return Rankings(grades, sizes.astype(np.int64), query_counts(y, bounds, max_label), rel_level)
