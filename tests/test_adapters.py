"""Inputs researchers already have: the same collection as files, DataFrames (meta-eval's and PyTerrier's column
names), pytrec_eval-style dicts, ranx objects, ir_measures / ir_datasets records and an ir_datasets dataset gives
identical scores; bad values are errors naming the object and the row."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import meta_eval as me
from meta_eval.inputs.trec import read_qrels, read_run, read_runs
from tests.conftest import write_collection

MEASURES = ["AP", "nDCG@10", "P@5", "bpref", "RR", "GAP", "infAP", "Judged@10"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("adapters")
    qrels, run_dir = write_collection(root, n_topics=6, n_docs=25, n_runs=3, depth=20, seed=5, noise=1.0)
    # unjudged documents and a negative grade, so that every kind of judgment goes through each adapter
    lines = qrels.read_text().splitlines()
    qrels.write_text("\n".join(lines[::3] + ["3 0 d3_2 -1"]) + "\n")  # d3_2 is not among the kept lines
    return qrels, sorted(run_dir.iterdir())


@pytest.fixture(scope="module")
def tables(files):
    qrels, runs = files
    q = pd.read_csv(qrels, sep=" ", header=None, names=["topic", "it", "docid", "grade"], dtype={"topic": str})
    r = pd.concat([pd.read_csv(p, sep=" ", header=None, names=["topic", "q0", "docid", "rank", "score", "run"],
                               dtype={"topic": str}) for p in runs], ignore_index=True)
    return q, r


def _scores(qrels, runs):
    return me.score(me.load_collection(qrels, runs), MEASURES)


def _same(a: dict, b: dict):
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def _run_dict(frame):
    out = {}
    for row in frame.itertuples():
        out.setdefault(row.topic, {})[row.docid] = float(row.score)
    return out


def _qrels_dict(frame):
    out = {}
    for row in frame.itertuples():
        out.setdefault(row.topic, {})[row.docid] = int(row.grade)
    return out


def test_every_input_kind_gives_the_files_scores(files, tables):
    qrels_file, run_files = files
    q, r = tables
    expected = _scores(qrels_file, run_files)
    runs = [part for _, part in r.groupby("run", sort=True)]
    names = [str(part.run.iloc[0]) for part in runs]

    # meta-eval's DataFrames: one frame with a run column
    _same(_scores(q[["topic", "docid", "grade"]], [r[["run", "topic", "docid", "score"]]]), expected)
    # PyTerrier's: qid, docno, score (+ its internal integer docid, which must be ignored) / qid, docno, label
    pt_qrels = q.rename(columns={"topic": "qid", "docid": "docno", "grade": "label"})
    pt_runs = [part.rename(columns={"topic": "qid", "docid": "docno"}).assign(docid=np.arange(len(part)))
               [["qid", "docid", "docno", "score", "run"]] for part in runs]
    _same(_scores(pt_qrels, pt_runs), expected)
    # pytrec_eval-style dicts, several runs as {run: {qid: {docid: score}}}
    _same(_scores(_qrels_dict(q), [{n: _run_dict(p) for n, p in zip(names, runs)}]), expected)
    # objects shaped like ranx's Run and Qrels (the real classes: test_real_ranx_objects)
    _same(_scores(FakeRanx(_qrels_dict(q)), [FakeRanx(_run_dict(p), name=n) for n, p in zip(names, runs)]), expected)
    # ir_measures records
    ir_measures = pytest.importorskip("ir_measures")
    qrel_records = [ir_measures.Qrel(x.topic, x.docid, int(x.grade)) for x in q.itertuples()]
    run_records = {n: [ir_measures.ScoredDoc(x.topic, x.docid, float(x.score)) for x in p.itertuples()]
                   for n, p in zip(names, runs)}
    col = me.load_collection(qrel_records, [run_records[n] for n in names])
    assert col.systems == ["run1", "run2", "run3"]  # unnamed objects are numbered
    _same(me.score(col, MEASURES), expected)
    assert me.load_collection(qrel_records, run_records[names[0]]).systems == ["run1"]  # a single run, unwrapped


class FakeRanx:
    """The shape of ranx's Run / Qrels: a ``to_dict()`` of ``{qid: {docid: value}}`` and a ``name``."""

    __module__ = "ranx.data_structures.fake"

    def __init__(self, data: dict, name: str | None = None):
        self.data, self.name = data, name

    def to_dict(self) -> dict:
        return self.data


@pytest.mark.slow  # ranx compiles numba code on first use: tens of seconds
def test_real_ranx_objects(files, tables):
    ranx = pytest.importorskip("ranx")
    qrels_file, run_files = files
    q, r = tables
    runs = [part for _, part in r.groupby("run", sort=True)]
    names = [str(part.run.iloc[0]) for part in runs]
    _same(_scores(ranx.Qrels(_qrels_dict(q)), [ranx.Run(_run_dict(p), name=n) for n, p in zip(names, runs)]),
          _scores(qrels_file, run_files))


def test_ir_datasets_records_and_dataset(files, tables):
    ir_datasets = pytest.importorskip("ir_datasets")
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import GenericScoredDoc, TrecQrel

    qrels_file, run_files = files
    q, r = tables
    first = r[r.run == r.run.iloc[0]]

    class Qrels:  # a dataset's components, as ir_datasets builds them (nothing is downloaded)
        def qrels_iter(self):
            return (TrecQrel(x.topic, x.docid, int(x.grade), "0") for x in q.itertuples())

    class ScoredDocs:
        def scoreddocs_iter(self):
            return (GenericScoredDoc(x.topic, x.docid, float(x.score)) for x in first.itertuples())

    dataset = Dataset(Qrels(), ScoredDocs())
    assert ir_datasets is not None
    expected = _scores(qrels_file, run_files[:1])
    _same(_scores(dataset, [dataset]), expected)
    _same(_scores(list(Qrels().qrels_iter()), list(ScoredDocs().scoreddocs_iter())), expected)
    assert read_run(dataset, name="bm25").name == "bm25"


def test_read_functions_accept_objects():
    run = read_run({"q1": {"d1": 2.0, "d2": 1}}, name="mine")
    assert run.name == "mine" and run.topic.to_pylist() == ["q1", "q1"] and run.score.tolist() == [2.0, 1.0]
    qrels = read_qrels({"q1": {"d1": 2, 7: 1}, 3: {"d9": 0}})  # integer ids are written as text
    assert qrels.docid.to_pylist() == ["d1", "7", "d9"] and qrels.topic.to_pylist() == ["q1", "q1", "3"]
    assert [r.name for r in read_runs([{"q": {"d": 1.0}}, {"q": {"d": 2.0}}])] == ["run1", "run2"]
    with pytest.raises(me.InputError, match="holds 2 runs; read it with read_runs"):
        read_run(pd.DataFrame({"run": ["a", "b"], "topic": ["1", "1"], "docid": ["x", "y"], "score": [1, 2]}))


@pytest.mark.parametrize("make, message", [
    (lambda: read_run({"q1": {"d1": 1.0, "d2": float("nan")}}, name="bm25"),
     r"run dict 'bm25': topic 'q1', document 'd2': score must be a finite number, got nan"),
    (lambda: read_run({"q1": {"d1": "high"}}, name="bm25"),
     r"document 'd1': score must be a finite number, got 'high'"),
    (lambda: read_run({"q1": {"d1": True}}, name="bm25"), r"score must be a finite number, got True"),
    (lambda: read_run({"q1": {"d0": 1.0, "d1": True}}, name="bm25"),
     r"document .d1.: score must be a finite number, got True"),
    (lambda: read_run({"q1": [1, 2]}, name="bm25"), r"topic 'q1' maps to list, expected a dict"),
    (lambda: read_run({301.0: {"d1": 1.0}}, name="bm25"), r"topic id must be a non-empty string or an integer, "
                                                           r"got 301.0 \(read ids as strings"),
    (lambda: read_run({"q1": {None: 1.0}}, name="bm25"), r"docid must be a non-empty string or an integer, got None"),
    (lambda: read_run({"": {"d": 1.0}}, name="bm25"), r"topic id must be a non-empty string"),
    (lambda: read_run(pd.DataFrame({"qid": ["1", "1"], "docno": ["a", None], "score": [1.0, 2.0]}), name="pt"),
     r"DataFrame pt:2: docid must be a non-empty string or an integer, got (None|nan)"),
    (lambda: read_run(pd.DataFrame({"qid": [1.0], "docno": ["a"], "score": [1.0]}), name="pt"),
     r"DataFrame pt:1: topic id must be a non-empty string or an integer, got 1.0"),
    (lambda: read_runs([pd.DataFrame({"run": ["a", "b", "b"], "topic": ["1", "1", "1"], "docid": ["x", "y", "z"],
                                      "score": [1.0, 2.0, np.inf]})]),
     r"DataFrame b:3: score must be a finite number, got inf"),  # the row of the whole frame
    (lambda: read_qrels(pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "b"], "label": [1, 0.5]})),
     r"qrels DataFrame:2: grade must be an integer, got 0.5"),
    (lambda: read_qrels({"q": {"d": 4000}}), r"qrels dict: topic 'q', document 'd': grade 4000 is above the largest"),
    (lambda: read_qrels({"q": {"d": "x"}}), r"qrels dict: topic 'q', document 'd': grade must be a finite number"),
    (lambda: read_qrels([object()]), r"cannot read qrels from a list"),
    (lambda: read_run(42), r"cannot read a run from a int"),
    (lambda: read_run([], name="empty"), r"run 'empty': the run holds no document"),
])
def test_errors_name_the_object_and_the_row(make, message):
    with pytest.raises(me.InputError, match=message):
        make()


def test_records_errors_name_the_item():
    ir_measures = pytest.importorskip("ir_measures")
    records = [ir_measures.ScoredDoc("1", "a", 1.0), ir_measures.ScoredDoc("1", "b", float("nan"))]
    with pytest.raises(me.InputError, match=r"ScoredDoc records 'run1': item 2: score must be a finite number"):
        read_runs(records)
    qrels = [ir_measures.Qrel("1", "a", 1), ir_measures.Qrel("1", "b", 2.5)]
    with pytest.raises(me.InputError, match=r"Qrel records: item 2: grade must be an integer, got 2.5"):
        read_qrels(qrels)


def test_duplicates_in_objects_are_reported():
    run = pd.DataFrame({"run": "r", "topic": ["1", "1"], "docid": ["a", "a"], "score": [1.0, 2.0]})
    with pytest.raises(me.InputError, match="a"):
        me.load_collection({"1": {"a": 1}}, [run])
