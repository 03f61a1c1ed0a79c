"""Learning-to-rank data: LETOR / SVMlight files with query ids, query groups, folds.

Format (LETOR 3/4, MSLR-WEB, Istella, Yahoo): one query-document pair a line, ``label qid:Q f:v f:v ...``, an
optional ``# comment`` at the end, the lines of a query contiguous. Files are read with scikit-learn's
``load_svmlight_files(..., query_id=True)`` (C-accelerated, ``.gz``/``.bz2`` transparent, one feature width for
all the files of a fold). A file it refuses is re-scanned line by line only to name the first bad line.

Folds: a folder of ``Fold1..FoldK/{train,vali,test}.txt[.gz]`` (LETOR), a folder holding ``train``/``vali``/``test``
files (one fold), or a single file split by K-fold cross-validation over queries. A missing validation file is
carved out of the training queries (``vali_fraction``, seeded).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.inputs.tables import MAX_GRADE
from meta_eval.core.params import rng as rng_from_seed

__all__ = ["Fold", "LTRSet", "load_folds", "read_letor", "read_letor_files"]

_EXTS = ("", ".txt", ".gz", ".txt.gz", ".bz2", ".txt.bz2", ".svm", ".svmlight")


@dataclass(eq=False)
class LTRSet:
    """Query-document pairs of a learning-to-rank set, grouped by query.

    Attributes
    ----------
    X : scipy.sparse.csr_matrix, shape (N, F)
        Features (float64).
    y : ndarray of int64, shape (N,)
        Relevance labels (grades 0..G).
    bounds : ndarray of int64, shape (Q + 1,)
        Query q holds rows ``bounds[q]:bounds[q + 1]`` (LightGBM's query boundaries).
    queries : ndarray, shape (Q,)
        The query id of each group, as in the file.
    source : str
        Where the pairs came from (file name, or file + fold), for messages.
    """

    X: object
    y: np.ndarray
    bounds: np.ndarray
    queries: np.ndarray
    source: str = "<memory>"

    @property
    def n_queries(self) -> int:
        return len(self.queries)

    @property
    def sizes(self) -> np.ndarray:
        """Documents per query, ``(Q,)``."""
        return np.diff(self.bounds)

    @property
    def max_label(self) -> int:
        return int(self.y.max(initial=0))

    @property
    def query_of_row(self) -> np.ndarray:
        """Index (0..Q-1) of the query of every row, ``(N,)``."""
        return np.repeat(np.arange(self.n_queries), self.sizes)

    def subset(self, query_indices, source: str | None = None) -> "LTRSet":
        """The queries ``query_indices`` (in that order), as a new set."""
        query_indices = np.asarray(query_indices, dtype=np.int64)
        sizes = self.sizes[query_indices]
        starts = self.bounds[query_indices]
        rows = np.repeat(starts - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes) + np.arange(sizes.sum())
        bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return LTRSet(self.X[rows], self.y[rows], bounds, self.queries[query_indices], source or self.source)


@dataclass(eq=False)
class Fold:
    """One train / validation / test split."""

    name: str
    train: LTRSet
    vali: LTRSet
    test: LTRSet

    @property
    def max_label(self) -> int:
        """Highest label of the three sets: the grade scale every query is scored on."""
        return max(self.train.max_label, self.vali.max_label, self.test.max_label)


def read_letor(path: str | Path, n_features: int | None = None) -> LTRSet:
    """Read one LETOR / SVMlight file with query ids.

    Raises
    ------
    InputError
        Unreadable file, malformed line (named by line number), a label that is not an integer in 0..127, a line
        without ``qid:``, or the lines of a query not contiguous.
    """
    return read_letor_files([path], n_features)[0]


def read_letor_files(paths, n_features: int | None = None) -> list[LTRSet]:
    """Read several LETOR files with one feature width (the widest file's, or ``n_features``)."""
    try:
        from sklearn.datasets import load_svmlight_files
    except ImportError:  # pragma: no cover - depends on the installation
        raise InputError('reading LETOR files needs scikit-learn: pip install "meta-eval[ltr]"') from None

    paths = [Path(p) for p in paths]
    for p in paths:
        if not p.is_file():
            raise InputError("learning-to-rank file not found", str(p))
    try:
        loaded = load_svmlight_files([str(p) for p in paths], n_features=n_features, query_id=True,
                                     dtype=np.float64, zero_based=False)
    except (ValueError, RuntimeError, OSError, EOFError) as exc:
        for p in paths:
            _diagnose(p)
        raise InputError(f"cannot read learning-to-rank files: {exc}", ", ".join(map(str, paths))) from None
    return [_group(p, *loaded[3 * i: 3 * i + 3]) for i, p in enumerate(paths)]


def _group(path: Path, X, y, qid) -> LTRSet:
    source = str(path)
    if len(qid) != len(y):  # scikit-learn skips a missing qid: find the line
        _diagnose(path)
        raise InputError("a line has no qid:", source)  # pragma: no cover - _diagnose names it
    if len(y) == 0:
        raise InputError("no query-document pair in the file", source)
    labels = np.asarray(y)
    bad = np.flatnonzero((labels != np.round(labels)) | (labels < 0) | (labels > MAX_GRADE))
    if bad.size:
        raise InputError(f"label {labels[bad[0]]:g} is not an integer grade in 0..{MAX_GRADE}", source,
                         _line_of_row(path, int(bad[0])))
    change = np.flatnonzero(qid[1:] != qid[:-1]) + 1
    starts = np.concatenate([[0], change])
    queries = qid[starts]
    uniq, first = np.unique(queries, return_index=True)
    if len(uniq) != len(queries):
        seen = np.zeros(len(queries), dtype=bool)
        seen[first] = True
        again = int(starts[np.flatnonzero(~seen)[0]])
        raise InputError(f"the lines of query {qid[again]} are not contiguous (the query appears again here)",
                         source, _line_of_row(path, again))
    bounds = np.concatenate([starts, [len(labels)]]).astype(np.int64)
    return LTRSet(X.tocsr(), labels.astype(np.int64), bounds, queries, source)


def _open_text(path: Path):
    import bz2
    import gzip

    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    if path.suffix == ".bz2":
        return bz2.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


_PAIR = re.compile(r"^[0-9]+:[^:\s]+$")


def _diagnose(path: Path) -> None:
    """Raise an InputError naming the first malformed line of ``path`` (called only after a failed read)."""
    try:
        with _open_text(path) as handle:
            for number, line in enumerate(handle, start=1):
                body = line.split("#", 1)[0].split()
                if not body:
                    continue
                try:
                    float(body[0])
                except ValueError:
                    raise InputError(f"label {body[0]!r} is not a number", str(path), number) from None
                if len(body) < 2 or not body[1].startswith("qid:"):
                    raise InputError("expected 'label qid:Q f:v ...' (no qid: after the label)", str(path), number)
                for item in body[2:]:
                    key, _, value = item.partition(":")
                    if not _PAIR.match(item) or int(key) < 1:
                        raise InputError(f"malformed feature {item!r}; expected index:value with index >= 1",
                                         str(path), number)
                    try:
                        float(value)
                    except ValueError:
                        raise InputError(f"feature value {value!r} is not a number", str(path), number) from None
    except (OSError, EOFError) as exc:
        raise InputError(f"cannot read file: {exc}", str(path)) from None


def _line_of_row(path: Path, row: int) -> int | None:
    """1-based line number of data row ``row`` (blank and comment-only lines skipped); error path only."""
    seen = -1
    with _open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if line.split("#", 1)[0].strip():
                seen += 1
                if seen == row:
                    return number
    return None


# ------------------------------------------------------------------------------------------------- folds


def _find(folder: Path, stem: str) -> Path | None:
    for ext in _EXTS:
        candidate = folder / f"{stem}{ext}"
        if candidate.is_file():
            return candidate
    return None


def load_folds(path: str | Path, *, k: int = 5, seed: int = 0, vali_fraction: float = 0.2,
               max_folds: int | None = None) -> list[Fold]:
    """The folds of a learning-to-rank data set.

    Parameters
    ----------
    path : path
        A LETOR file (split into ``k`` folds over queries: fold i tests on part i, validates on part i+1, trains on
        the rest, as LETOR's own folds), a folder with ``train``/``test`` (and ``vali``) files, or a folder of
        ``Fold1..FoldK`` such folders.
    k : int
        Folds of the cross-validation of a single file (>= 3).
    seed : int
        Seed of the query permutation (single file) and of the validation split (no ``vali`` file).
    vali_fraction : float
        Share of training queries held out for validation when a folder has no ``vali`` file.
    max_folds : int, optional
        Use only the first folds (quick runs).
    """
    path = Path(path)
    if not path.exists():
        raise InputError("learning-to-rank data not found", str(path))
    if not 0 < vali_fraction < 1:
        raise InputError(f"vali_fraction must be in (0, 1), got {vali_fraction}")
    if path.is_file():
        folds = _cross_validation(read_letor(path), k, seed)
    else:
        subdirs = sorted((d for d in path.iterdir() if d.is_dir() and re.fullmatch(r"(?i)fold\d+", d.name)),
                         key=lambda d: int(d.name[4:]))
        if subdirs:
            folds = [_folder_fold(d, d.name, seed, vali_fraction) for d in subdirs[: max_folds or len(subdirs)]]
        else:
            folds = [_folder_fold(path, path.name or "fold", seed, vali_fraction)]
    return folds[: max_folds or len(folds)]


def _folder_fold(folder: Path, name: str, seed: int, vali_fraction: float) -> Fold:
    train, vali, test = _find(folder, "train"), _find(folder, "vali"), _find(folder, "test")
    if train is None or test is None:
        raise InputError("expected train and test files (train.txt, vali.txt, test.txt, .gz allowed) or Fold1.."
                         "FoldK folders", str(folder))
    if vali is not None:
        tr, va, te = read_letor_files([train, vali, test])
        return Fold(name, tr, va, te)
    tr, te = read_letor_files([train, test])
    rng = rng_from_seed(seed, "LETOR folds")
    order = rng.permutation(tr.n_queries)
    n_vali = max(1, int(round(vali_fraction * tr.n_queries)))
    if tr.n_queries - n_vali < 1:
        raise InputError("too few training queries to hold some out for validation", str(train))
    return Fold(name, tr.subset(np.sort(order[n_vali:]), f"{train} (train part)"),
                tr.subset(np.sort(order[:n_vali]), f"{train} (validation part)"), te)


def _cross_validation(data: LTRSet, k: int, seed: int) -> list[Fold]:
    if k < 3:
        raise InputError(f"cross-validation needs k >= 3 folds (train, validation, test), got k={k}")
    if data.n_queries < k:
        raise InputError(f"{data.n_queries} queries cannot be split into {k} folds", data.source)
    parts = np.array_split(rng_from_seed(seed, "LETOR folds").permutation(data.n_queries), k)
    folds = []
    for i in range(k):
        test, vali = parts[i], parts[(i + 1) % k]
        train = np.concatenate([parts[j] for j in range(k) if j not in (i, (i + 1) % k)])
        name = f"Fold{i + 1}"
        folds.append(Fold(name, data.subset(np.sort(train), f"{data.source} [{name} train]"),
                          data.subset(np.sort(vali), f"{data.source} [{name} vali]"),
                          data.subset(np.sort(test), f"{data.source} [{name} test]")))
    return folds
