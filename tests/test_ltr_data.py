"""LETOR reading and folds: groups, gzip, malformed lines named by line, folds of a file, a folder, a Fold tree."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

pytest.importorskip("sklearn")

from meta_eval import InputError  # noqa: E402
from meta_eval.inputs.letor import load_folds, read_letor  # noqa: E402
from meta_eval.statistics.learning_to_rank.groups import blocks, query_counts, ranked_rankings  # noqa: E402

from conftest import shared_path  # noqa: E402

TEXT = """2 qid:10 1:0.5 3:1.0 # doc a
0 qid:10 1:0.1 2:0.2
1 qid:10 2:0.7

0 qid:7 1:0.0 3:0.3
1 qid:7 1:0.9
"""


def test_read_groups_and_gzip(tmp_path):
    plain = tmp_path / "a.txt"
    plain.write_text(TEXT)
    packed = tmp_path / "a.txt.gz"
    packed.write_bytes(gzip.compress(TEXT.encode()))
    for path in (plain, packed):
        d = read_letor(path)
        assert d.queries.tolist() == [10, 7]
        assert d.bounds.tolist() == [0, 3, 5]
        assert d.y.tolist() == [2, 0, 1, 0, 1]
        assert d.X.shape == (5, 3)
        assert d.X[0, 2] == 1.0
    sub = d.subset([1, 0])
    assert sub.queries.tolist() == [7, 10] and sub.y.tolist() == [0, 1, 2, 0, 1]


@pytest.mark.parametrize("text, line, message", [
    ("1 qid:1 1:0.5\nx qid:1 1:0.2\n", 2, "label"),
    ("1 qid:1 1:0.5\n0 1:0.2\n", 2, "qid"),
    ("1 qid:1 1:0.5\n\n0 qid:1 1:abc\n", 3, "value"),
    ("1 qid:1 1:0.5\n0 qid:1 0:0.2\n", 2, "index"),
    ("1 qid:1 1:0.5\n0.5 qid:1 1:0.2\n", 2, "integer"),
    ("1 qid:1 1:0.5\n0 qid:2 1:0.2\n1 qid:1 1:0.3\n", 3, "contiguous"),
])
def test_malformed_lines_are_named(tmp_path, text, line, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as err:
        read_letor(path)
    assert f"bad.txt:{line}:" in str(err.value)


def test_missing_and_empty(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_folds(tmp_path / "nothing")
    with pytest.raises(InputError, match="train and test"):
        load_folds(tmp_path)


def _write(path, queries, seed):
    rng = np.random.default_rng(seed)
    lines = [f"{rng.integers(0, 3)} qid:{q} 1:{rng.normal():.3f} 2:{rng.normal():.3f}" for q in queries
             for _ in range(4)]
    path.write_text("\n".join(lines) + "\n")


def test_cross_validation_of_one_file(tmp_path):
    path = tmp_path / "all.txt"
    _write(path, range(1, 11), 0)
    folds = load_folds(path, k=5, seed=3)
    assert len(folds) == 5
    tests = np.concatenate([f.test.queries for f in folds])
    assert sorted(tests.tolist()) == list(range(1, 11))  # every query tested exactly once
    for f in folds:
        parts = [set(f.train.queries), set(f.vali.queries), set(f.test.queries)]
        assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
        assert len(parts[0]) == 6
    assert [f.test.queries.tolist() for f in load_folds(path, k=5, seed=3)] == [f.test.queries.tolist() for f in folds]
    with pytest.raises(InputError, match="k >= 3"):
        load_folds(path, k=2)


def test_fold_tree_and_folder_without_vali(tmp_path):
    for i in (1, 2):
        d = tmp_path / f"Fold{i}"
        d.mkdir()
        for j, name in enumerate(("train", "vali", "test")):
            _write(d / f"{name}.txt", range(10 * j + 1, 10 * j + 4), i + j)
    folds = load_folds(tmp_path)
    assert [f.name for f in folds] == ["Fold1", "Fold2"]
    assert folds[0].vali.queries.tolist() == [11, 12, 13]
    single = tmp_path / "Fold1"
    (single / "vali.txt").unlink()
    fold = load_folds(single, vali_fraction=0.34)[0]
    assert fold.vali.n_queries == 1 and fold.train.n_queries == 2


def test_blocks_cover_every_query_once():
    bounds = np.concatenate([[0], np.cumsum([3, 40, 5, 41, 1, 90])])
    bl = blocks(bounds, cells=5000)
    queries = np.concatenate([b.queries for b in bl])
    assert sorted(queries.tolist()) == list(range(6))
    for b in bl:
        assert len(b.queries) * b.width**2 <= 5000 or len(b.queries) == 1
        assert np.all(b.valid.sum(1) == np.diff(bounds)[b.queries])


def test_ranked_rankings_ties_keep_file_order():
    y = np.array([0, 2, 1, 1, 0])
    bounds = np.array([0, 3, 5])
    r = ranked_rankings(np.array([0.5, 0.5, 0.9, 0.1, 0.2]), y, bounds, 2)
    assert r.grades.tolist() == [[1, 0, 2], [0, 1, -3]]
    assert r.counts.tolist() == query_counts(y, bounds, 2).tolist() == [[1, 1, 1], [1, 1, 0]]


@pytest.mark.shared
def test_mslr_sample_layout():
    fold = load_folds(shared_path("data", "mslr-sample"), seed=0)[0]
    assert fold.train.n_queries + fold.vali.n_queries == 43 and fold.test.n_queries == 43
    assert fold.train.X.shape[1] == fold.test.X.shape[1] == 136
    assert fold.max_label == 4
