"""A collection read in pieces of runs within a memory budget (meta_eval.model.collection.load_collection_pieces) scores
exactly as the whole collection, and the pieces hold what the budget allows."""

from __future__ import annotations

import numpy as np
import pytest

from meta_eval.model.collection import (BYTES_PER_CELL, BYTES_PER_DOCUMENT, BYTES_PER_LIST, load_collection,
                                  load_collection_pieces)
from meta_eval.measures.scoring import score_pieces, scores
from meta_eval.core.errors import InputError

MEASURES = ["AP", "nDCG", "nDCG@10", "P@10", "Rprec", "RR", "bpref", "gm_map", "num_rel", "num_ret"]


def _write(folder, n_runs=7, n_topics=9, seed=0):
    """Qrels and runs of uneven depth (1..60 documents, some topics missing), two of them sharing a tag."""
    rng = np.random.default_rng(seed)
    qrels = folder / "qrels"
    qrels.write_text("".join(f"{t} 0 d{d} {rng.integers(-1, 3)}\n" for t in range(n_topics) for d in range(0, 40, 3)))
    (folder / "runs").mkdir()
    for r in range(n_runs):
        lines = []
        for t in range(n_topics):
            if rng.random() < 0.2:
                continue
            docs = rng.choice(80, size=rng.integers(1, 61), replace=False)
            scores = np.round(rng.random(len(docs)), 1)  # ties
            lines += [f"{t} Q0 d{d} {i + 1} {s} {'same' if r in (2, 5) else f'run{r}'}\n"
                      for i, (d, s) in enumerate(zip(docs, scores))]
        (folder / "runs" / f"r{r}.txt").write_text("".join(lines))
    return qrels, folder / "runs"


def _held(piece) -> int:
    """The bytes a piece holds, at the stated costs, counted on the piece itself."""
    return (BYTES_PER_DOCUMENT * int(piece.n_ret.sum()) + sum(BYTES_PER_CELL * b.rankings.grades.size
                                                              for b in piece.blocks)
            + BYTES_PER_LIST * piece.n_ret.size)


@pytest.mark.parametrize("options", [{}, {"missing": "skip"}, {"depth": 5, "unjudged": "remove"}])
@pytest.mark.parametrize("budget", ["1 byte", "a third", "none"])
def test_pieces_score_as_the_whole_collection(tmp_path, options, budget):
    """Whatever the budget (1 byte: a run per piece; a third of the collection: a few runs per piece), the scores,
    their order and the runs' names (two runs sharing a tag told apart by their files, in different pieces) are
    those of the whole collection."""
    qrels, runs = _write(tmp_path)
    collection = load_collection(qrels, [runs], **options)
    whole = scores(collection, MEASURES)
    memory = {"1 byte": 1, "a third": _held(collection) // 3, "none": None}[budget]
    pieces = list(load_collection_pieces(qrels, [runs], memory=memory, **options))
    assert len(pieces) == {"1 byte": 7, "none": 1}.get(budget, len(pieces)) and (budget != "a third"
                                                                                or 3 <= len(pieces) < 7)
    assert sum(len(piece.systems) for piece in pieces) == 7
    parts = score_pieces(iter(pieces), MEASURES)
    assert parts.systems == whole.systems and "same@r2.txt" in parts.systems
    assert parts.topics == whole.topics and [m.output_name for m in parts.measures] == whole.names
    for a, b in zip(parts.values + parts.summary, whole.values + whole.summary):
        np.testing.assert_array_equal(a, b)


def test_pieces_stay_within_the_budget(tmp_path):
    """Every piece of several runs holds at most the budget: documents, block cells and lists at their stated
    costs, counted on the pieces themselves."""
    qrels, runs = _write(tmp_path, n_runs=12)
    budget = 40_000
    pieces = list(load_collection_pieces(qrels, [runs], memory=budget))
    assert 1 < len(pieces) < 12
    for piece in pieces:
        assert _held(piece) <= budget or len(piece.systems) == 1


def test_bad_budgets_and_no_runs_are_refused(tmp_path):
    qrels, runs = _write(tmp_path, n_runs=1)
    with pytest.raises(InputError, match="memory must be a positive"):
        list(load_collection_pieces(qrels, [runs], memory=0))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError):
        list(load_collection_pieces(qrels, [str(empty / "*.txt")], memory=None))


def test_cli_reads_in_pieces_with_the_same_output(tmp_path):
    from typer.testing import CliRunner

    from meta_eval.cli import app

    qrels, runs = _write(tmp_path)
    args = ["evaluate", "-Q", str(qrels), str(runs), "-m", "AP", "-m", "P@10", "-q", "-f", "trec", "--no-progress"]
    whole = CliRunner().invoke(app, args)
    pieces = CliRunner().invoke(app, [*args, "--memory", "1K"])
    assert whole.exit_code == 0 and pieces.exit_code == 0, pieces.output
    assert pieces.output == whole.output
    bad = CliRunner().invoke(app, [*args, "--memory", "lots"])
    assert bad.exit_code != 0 and "--memory must be a size" in bad.output
