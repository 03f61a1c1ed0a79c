"""Score tables (:mod:`meta_eval.inputs.score_tables`): every layout read back to the collection's own arrays, every bad
input named by file and line, the missing-cell policies, and the round trip — scores written by ``meta-eval
evaluate`` (tidy CSV, trec_eval layout) and a wide matrix, read back, give the same analyses as the collection."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import warnings

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import meta_eval as me
from meta_eval.analyses import AnalysisData, get_analysis
from meta_eval.cli import app
from meta_eval.core.errors import ConflictError, InputError, MetaEvalWarning
from meta_eval.inputs.score_tables import ScoreTable, read_scores
from tests.conftest import shared_path

runner = CliRunner()
MEASURES = ("AP", "nDCG@10")


@pytest.fixture(scope="module")
def demo():
    """The demo collection and its per-topic AP and nDCG@10 (the reference every layout must give back)."""
    col = me.demo_collection()
    return col, {m: me.score(col, m) for m in MEASURES}


@pytest.fixture(scope="module")
def written(tmp_path_factory, demo):
    """``meta-eval evaluate -q`` of the demo as tidy CSV and in trec_eval's layout."""
    folder = tmp_path_factory.mktemp("scores")
    for name, extra in (("scores.csv", ()), ("scores.trec", ("-f", "trec"))):
        result = runner.invoke(app, ["evaluate", "-q", "-m", "AP", "-m", "nDCG@10", "-o", str(folder / name), *extra])
        assert result.exit_code == 0, result.output
    return folder


def same_as(table: ScoreTable, col, scores, measures=MEASURES) -> None:
    assert list(table.systems) == list(col.systems) and list(table.topics) == list(col.topics)
    assert table.measures == list(measures)
    for m in measures:
        np.testing.assert_array_equal(table.scores[m], scores[m])
        assert table.scores[m].dtype == np.float64 and table.scores[m].flags.c_contiguous


def four_decimals(x: np.ndarray) -> np.ndarray:
    """What trec_eval's layout keeps of a score: printf's %.4f, read back."""
    return np.vectorize(lambda v: float(f"{v:.4f}"))(x)


# --------------------------------------------------------------------------------------------- layouts


def test_tidy_csv_of_evaluate_reads_back_exactly_without_its_summary_rows(written, demo):
    col, scores = demo
    table = read_scores(written / "scores.csv")
    same_as(table, col, scores)
    assert table.source == str(written / "scores.csv") and table.filled == 0 and table.dropped == ()


def test_a_fifo_is_read_as_a_stream(tmp_path, written, demo):
    """A score table written into a FIFO (a shell's process substitution) is read once, as text: checking for
    Parquet must not open it and swallow its first bytes (the reader then waited for a writer that had gone)."""
    import threading

    col, scores = demo
    fifo = tmp_path / "scores.fifo"
    os.mkfifo(fifo)
    data = (written / "scores.csv").read_bytes()

    def write() -> None:
        with open(fifo, "wb") as f:
            f.write(data)

    read: list = []
    threads = [threading.Thread(target=write, daemon=True),
               threading.Thread(target=lambda: read.append(read_scores(fifo)), daemon=True)]
    for thread in threads:
        thread.start()
    threads[1].join(timeout=60)  # a reader waiting for a second writer never returns: a failure, not a hang
    assert read, "the reader is still waiting on the FIFO"
    same_as(read[0], col, scores)


def test_trec_layout_of_evaluate_reads_back_to_four_decimals(written, demo):
    col, scores = demo
    table = read_scores(written / "scores.trec")
    same_as(table, col, {m: four_decimals(x) for m, x in scores.items()})


def test_trec_eval_q_output_one_file_per_run_and_many_in_one(tmp_path):
    """Real trec_eval 10 output (-q): per-topic lines, then each run's all lines (runid, num_q, summaries) — left
    out; with -m the runid line is absent and the file names the run."""
    binary = os.environ.get("META_EVAL_TREC_EVAL10")
    if not binary or not shutil.which(binary):
        pytest.skip("trec_eval 10 not available")
    qrels, runs = me.demo_paths()
    files = []
    for gz in sorted(runs.iterdir())[:3]:  # trec_eval reads plain files
        files.append(tmp_path / gz.name.removesuffix(".gz"))
        files[-1].write_bytes(gzip.decompress(gz.read_bytes()) if gz.name.endswith(".gz") else gz.read_bytes())
    outputs = []
    for f in files:
        text = subprocess.run([binary, "-q", str(qrels), str(f)], capture_output=True, text=True, check=True).stdout
        (tmp_path / f"{f.name}.eval").write_text(text)
        outputs.append(text)
    (tmp_path / "all.eval").write_text("".join(outputs))
    col = me.load_collection(qrels, files)
    ap = four_decimals(me.score(col, "AP"))
    for source in ([tmp_path / f"{f.name}.eval" for f in files], tmp_path / "all.eval"):
        table = read_scores(source, measures=["map", "P_10"])
        assert list(table.systems) == list(col.systems) and list(table.topics) == list(col.topics)
        np.testing.assert_array_equal(table.scores["map"], ap)
        np.testing.assert_array_equal(table.scores["P_10"], four_decimals(me.score(col, "P@10")))
    text = subprocess.run([binary, "-q", "-m", "map", str(qrels), str(files[0])], capture_output=True, text=True,
                          check=True).stdout
    (tmp_path / "bm25.trec").write_text(text)
    assert read_scores(tmp_path / "bm25.trec").systems == ("bm25",)
    assert read_scores(tmp_path / "bm25.trec", name="mine").systems == ("mine",)


def test_tsv_parquet_gzip_and_dataframes_read_the_same_cells(tmp_path, demo):
    col, scores = demo
    tidy = read_scores({m: scores[m] for m in MEASURES}, systems=col.systems, topics=col.topics).to_frame()
    tidy.to_csv(tmp_path / "s.tsv", sep="\t", index=False)
    tidy.to_parquet(tmp_path / "s.parquet", index=False)
    (tmp_path / "s.csv.gz").write_bytes(gzip.compress(tidy.to_csv(index=False).encode()))
    for source in (tmp_path / "s.tsv", tmp_path / "s.parquet", tmp_path / "s.csv.gz", tidy):
        same_as(read_scores(source), col, scores)
    shuffled = read_scores(tidy.sample(frac=1, random_state=0))  # rows in any order: topics in byte order, runs
    assert list(shuffled.topics) == list(col.topics)  # in the order they first appear
    order = [list(shuffled.systems).index(s) for s in col.systems]
    for m in MEASURES:
        np.testing.assert_array_equal(shuffled.scores[m][order], scores[m])


def test_pyterrier_and_ir_measures_frames(demo):
    """PyTerrier's pt.Experiment(perquery=True): name, qid, measure, value; ir_measures' iter_calc: query_id,
    measure (a Measure object), value — one run, named by ``name``."""
    ir_measures = pytest.importorskip("ir_measures")
    col, scores = demo
    tidy = read_scores(scores, systems=col.systems, topics=col.topics).to_frame()
    pyterrier = tidy.rename(columns={"run": "name", "topic": "qid"})
    same_as(read_scores(pyterrier), col, scores)
    ap = ir_measures.parse_measure("AP")
    one = tidy[(tidy.run == col.systems[0]) & (tidy.measure == "AP")]
    frame = pd.DataFrame({"query_id": one.topic, "measure": [ap] * len(one), "value": one.value})
    table = read_scores(frame, name="bm25")
    assert table.systems == ("bm25",) and table.measures == ["AP"]
    np.testing.assert_array_equal(table.scores["AP"][0], scores["AP"][0])


def test_wide_matrices_with_and_without_a_topic_column(tmp_path, demo):
    col, scores = demo
    table = read_scores(scores, systems=col.systems, topics=col.topics)
    wide = table.to_wide("AP")
    wide.to_csv(tmp_path / "AP.csv")  # pandas writes the index as the first column
    same_as(read_scores(tmp_path / "AP.csv"), col, scores, ["AP"])  # the measure from the file's name
    wide.to_csv(tmp_path / "ap.txt", sep=" ")  # whitespace-separated, as Discpower's matrices
    same_as(read_scores(tmp_path / "ap.txt", measure="AP"), col, scores, ["AP"])
    wide.to_csv(tmp_path / "x.tsv", sep="\t", index=False)  # no topic column: the rows are topics 1..T in order
    unnamed = read_scores(tmp_path / "x.tsv", measure="AP")
    assert unnamed.topics == tuple(str(t) for t in range(1, len(col.topics) + 1))
    np.testing.assert_array_equal(unnamed.scores["AP"], scores["AP"])
    same_as(read_scores(wide, measure="AP"), col, scores, ["AP"])  # a DataFrame's index names the topics
    both = read_scores([tmp_path / "AP.csv", tmp_path / "ap.txt"])  # one file per measure, pooled
    assert both.measures == ["AP", "ap"]


def test_arrays_keep_their_order_and_measures_can_be_chosen(demo):
    col, scores = demo
    topics = list(reversed(col.topics))
    table = read_scores({m: x[:, ::-1] for m, x in scores.items()}, systems=col.systems, topics=topics)
    assert list(table.topics) == topics
    picked = read_scores(table, measures=["nDCG@10", "AP"])
    assert picked.measures == ["nDCG@10", "AP"]
    with pytest.raises(InputError, match=r"no measure 'nDCG@1O'.*did you mean nDCG@10"):
        read_scores(table, measures=["nDCG@1O"])
    single = read_scores(scores["AP"], measure="AP", systems=col.systems)
    assert single.topics == tuple(str(t) for t in range(1, 21))


# --------------------------------------------------------------------------------------------- errors


TIDY = "run,topic,measure,value\na,1,AP,0.5\na,2,AP,0.25\nb,1,AP,0.75\nb,2,AP,1\n"


def error(tmp_path, text: str, name: str = "s.csv", **options) -> InputError:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_scores(path, **options)
    return info.value


@pytest.mark.parametrize("line, replacement, message", [
    (3, "a,2,AP,0.25,9", "expected 4 comma-separated fields (run, topic, measure, value), found 5"),
    (4, "b,1,AP,abc", "value must be a number, got 'abc'"),
    (4, "b,1,AP,nan", "value must be a finite number, got 'nan'"),
    (5, "b,2,AP,1e999", "out of the 64-bit float range"),
    (5, "b,2,AP,-inf", "value must be a finite number, got '-inf'"),
    (3, "a,,AP,0.25", "topic id is empty"),
])
def test_bad_cells_are_named_by_file_and_line(tmp_path, line, replacement, message):
    lines = TIDY.splitlines()
    lines[line - 1] = replacement
    exc = error(tmp_path, "\n".join(lines) + "\n")
    assert exc.line == line and exc.source == str(tmp_path / "s.csv") and message in str(exc), str(exc)


def test_a_cell_given_twice_names_both_lines(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text(TIDY + "a,2,AP,0.3\n")
    with pytest.raises(ConflictError, match=r"run 'a', topic '2', measure 'AP' is given twice \(first at .*s.csv:3\)") \
            as info:
        read_scores(path)
    assert info.value.line == 6
    with pytest.raises(ConflictError, match="topic '1' has two rows"):
        read_scores(pd.DataFrame({"topic": ["1", "1"], "a": [0.1, 0.2]}), measure="AP")


def test_missing_cells_follow_the_policy(tmp_path):
    text = "\n".join(TIDY.splitlines()[:-1]) + "\n"  # run b lacks topic 2
    exc = error(tmp_path, text)
    assert "run 'b' has no AP score for topic '2' (1 cells missing)" in str(exc) and "missing='zero'" in str(exc)
    zero = read_scores(tmp_path / "s.csv", missing="zero")
    np.testing.assert_array_equal(zero.scores["AP"], [[0.5, 0.25], [0.75, 0.0]])
    assert zero.filled == 1
    with pytest.warns(MetaEvalWarning, match="left out 1 of 2 topics"):
        skip = read_scores(tmp_path / "s.csv", missing="skip")
    assert skip.topics == ("1",) and skip.dropped == ("2",)
    np.testing.assert_array_equal(skip.scores["AP"], [[0.5], [0.75]])
    empty = error(tmp_path, "topic,a,b\n1,0.5,0.75\n2,0.25,\n", "AP.csv")  # an empty cell: missing, with its line
    assert empty.line == 3 and "run 'b' has no AP score for topic '2'" in str(empty)
    with pytest.raises(InputError, match="run 'b' has no nDCG score on any topic"):
        read_scores(pd.DataFrame({"run": ["a", "b", "a"], "topic": ["1", "1", "1"], "measure": ["AP", "AP", "nDCG"],
                                  "value": [0.1, 0.2, 0.3]}), missing="zero")
    nan = read_scores({"AP": np.array([[0.1, np.nan], [0.2, 0.3]])}, systems=["a", "b"], missing="zero")
    assert nan.filled == 1
    with pytest.raises(InputError, match="run 'a' has no AP score for topic '2'"):
        read_scores({"AP": np.array([[0.1, np.nan], [0.2, 0.3]])}, systems=["a", "b"])


def test_layout_errors(tmp_path):
    assert error(tmp_path, "topic,a,a\n1,0.1,0.2\n", "AP.csv").line == 1  # a column twice
    numbers = error(tmp_path, "0.1,0.2\n0.3,0.4\n", "AP.csv")
    assert numbers.line == 1 and "the header holds numbers, not run names" in str(numbers)
    trec = error(tmp_path, "map\t1\t0.5\nmap\t2\n", "x.eval")
    assert trec.line == 2 and "expected 3 whitespace-separated fields (measure topic value), found 2" in str(trec)
    assert "not a number" not in str(error(tmp_path, "map\t1\t0.5\nmap\t2\tx\n", "x.eval"))
    assert error(tmp_path, "map\t1\t0.5\nmap\t2\tx\n", "x.eval").line == 2
    ws = error(tmp_path, "topic a b\n1 0.1 0.2\n2 0.3\n", "AP.txt")
    assert ws.line == 3 and "expected 3 whitespace-separated fields (topic a b), found 2" in str(ws)
    (tmp_path / "z.csv").write_bytes(b"")
    with pytest.raises(InputError, match="file is empty"):
        read_scores(tmp_path / "z.csv")
    (tmp_path / "bin.csv").write_bytes(b"run,topic\x00")
    with pytest.raises(InputError, match="binary data"):
        read_scores(tmp_path / "bin.csv")
    with pytest.raises(InputError, match="missing must be one of error, zero, skip"):
        read_scores(tmp_path / "s.csv", missing="drop")
    with pytest.raises(InputError, match="systems and topics name the rows and columns of score arrays"):
        read_scores(tmp_path / "s.csv", systems=["a"])


@pytest.mark.parametrize("name, text", [("s.csv", "run,topic,measure,value\n"),
                                        ("s.tsv", "run\ttopic\tmeasure\tvalue\n"),
                                        ("AP.csv", "topic,BM25,QL\n"), ("AP.csv", "run,topic,AP\n"),
                                        ("AP.csv", "BM25,QL\n")])
def test_a_header_without_rows_is_a_clear_error(tmp_path, name, text):
    """A table of a header alone (no score) is named as such, never an IndexError from inside the number check."""
    (tmp_path / name).write_text(text)
    with pytest.raises(InputError, match="holds no score"):
        read_scores(tmp_path / name)


def test_dataframe_errors_name_the_row():
    frame = pd.DataFrame({"run": ["a", "a"], "topic": [301.0, 302.0], "measure": "AP", "value": [0.1, 0.2]})
    with pytest.raises(InputError, match=r"DataFrame:1: topic id must be a non-empty string or an integer, got 301.0"):
        read_scores(frame)
    frame = pd.DataFrame({"run": ["a", "a"], "topic": [1, 2], "measure": "AP", "value": [0.1, np.inf]})
    with pytest.raises(InputError, match="DataFrame:2: value must be a finite number, got inf"):
        read_scores(frame)
    frame = pd.DataFrame({"run": ["a", "a"], "topic": [1, 2], "measure": "AP", "value": [0.1, True]})
    with pytest.raises(InputError, match="DataFrame:2: value must be a number, got True"):
        read_scores(frame)
    frame = pd.DataFrame({"run": ["a", "a"], "topic": [1, 2], "measure": "AP", "value": ["0.1", "x"]})
    with pytest.raises(InputError, match="DataFrame:2: value must be a number, got 'x'"):
        read_scores(frame)
    with pytest.raises(InputError, match="name the measure of a wide score table"):
        read_scores(pd.DataFrame({"a": [0.1], "b": [0.2]}))


def test_tidy_or_wide_is_told_by_the_columns_and_no_column_is_left_out():
    """Tidy: a value and a topic column with a run or a measure column (or alone); any other column is an error,
    never dropped. A wide table may name a run "score"."""
    wide = read_scores(pd.DataFrame({"topic": ["1", "2"], "score": [0.1, 0.2], "bm25": [0.3, 0.4]}), measure="AP")
    assert wide.systems == ("score", "bm25")
    one = read_scores(pd.DataFrame({"qid": ["1", "2"], "value": [0.1, 0.2]}), name="bm25", measure="AP")
    assert one.systems == ("bm25",) and one.measures == ["AP"]
    with pytest.raises(InputError, match="it also has 'note': drop them, or give layout='wide'"):
        read_scores(pd.DataFrame({"run": ["a"], "topic": ["1"], "measure": ["AP"], "value": [0.1], "note": ["x"]}))


def test_summary_rows_are_left_out(tmp_path):
    """A summary column (evaluate's) marks them; without one, the topic all (trec_eval's summary) does."""
    with_flag = TIDY.replace("run,topic,measure,value", "run,topic,measure,value,summary").replace("\n", ",False\n")
    with_flag = with_flag.replace("value,summary,False", "value,summary") + "a,all,AP,0.4,True\n"
    (tmp_path / "f.csv").write_text(with_flag)
    assert read_scores(tmp_path / "f.csv").topics == ("1", "2")
    (tmp_path / "g.csv").write_text(TIDY + "a,all,AP,0.4\nb,all,AP,0.9\n")
    assert read_scores(tmp_path / "g.csv").topics == ("1", "2")


# --------------------------------------------------------------------------------------------- round trip


ANALYSES = {"discpower": dict(n_resamples=200, top=5), "correlation": dict(n_resamples=50),
            "anova": {}, "split-half": dict(n_splits=10), "error-rates": dict(n_trials=50, family_trials=10,
                                                                              n_resamples=100, sizes=(5, 10))}


def analyses_agree(a: AnalysisData, b: AnalysisData) -> None:
    for name, params in ANALYSES.items():
        ra, rb = get_analysis(name)(a, **params), get_analysis(name)(b, **params)
        for x, y in zip(ra.tables(), rb.tables()):
            pd.testing.assert_frame_equal(x.frame, y.frame, check_exact=True, obj=f"{name}: {x.stem}")


def test_round_trip_gives_the_collections_analyses(written, demo, tmp_path):
    """Discriminative power, correlation, ANOVA and topic-set size, split-half stability (and error rates) are
    identical from the collection and from its scores read back: tidy CSV (exact floats), a wide matrix per
    measure, and trec_eval's layout (against the collection's scores to four decimals)."""
    col, scores = demo
    reference = AnalysisData.from_collection(col, list(MEASURES), against=["nDCG@10"])
    analyses_agree(reference, AnalysisData.from_scores(read_scores(written / "scores.csv"), against=["nDCG@10"]))
    table = read_scores(written / "scores.csv")
    for m in MEASURES:
        table.to_wide(m).to_csv(tmp_path / f"{m}.csv")
    wide = read_scores([tmp_path / f"{m}.csv" for m in MEASURES])
    analyses_agree(reference, AnalysisData.from_scores(wide, against=["nDCG@10"]))
    rounded = AnalysisData.from_scores({m: four_decimals(x) for m, x in scores.items()}, col.systems,
                                       topics=col.topics, against=["nDCG@10"])
    analyses_agree(rounded, AnalysisData.from_scores(read_scores(written / "scores.trec"), against=["nDCG@10"]))


def test_round_trip_on_trec_covid(tmp_path):
    data = shared_path("data", "trec-covid-round1")
    col = me.load_collection(data / "qrels.txt", [data / "runs"])
    out = tmp_path / "covid.csv"
    result = runner.invoke(app, ["evaluate", "-Q", str(data / "qrels.txt"), str(data / "runs"), "-q", "-m", "AP",
                                 "-m", "nDCG@10", "-o", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    table = read_scores(out)
    assert len(table.systems) == len(col.systems) == 143 and list(table.topics) == list(col.topics)
    analyses_agree(AnalysisData.from_collection(col, list(MEASURES), against=["nDCG@10"]),
                   AnalysisData.from_scores(table, against=["nDCG@10"]))


def test_analysis_data_from_scores_checks_its_arrays(demo):
    col, scores = demo
    table = read_scores(scores, systems=col.systems, topics=col.topics)
    with pytest.raises(InputError, match="names its own systems and topics"):
        AnalysisData.from_scores(table, col.systems)
    with pytest.raises(InputError, match=r"have shape \(32, 19\); expected \(32 systems, 20 topics\)"):
        AnalysisData.from_scores({"AP": scores["AP"], "x": scores["AP"][:, 1:]}, col.systems)
    with pytest.raises(InputError, match="a mapping .* or a ScoreTable"):
        AnalysisData.from_scores([scores["AP"]], col.systems)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = AnalysisData.from_scores(table)
    assert data.systems == list(col.systems) and data.topics == list(col.topics)


def test_a_measure_name_read_from_a_table_never_runs_code(tmp_path):
    """A score table whose measure column holds ``evil.py:m``: the properties analysis (which studies the measures
    the table names) refused it and ran nothing — from the command and from the study's data alike."""
    evil = tmp_path / "evil.py"
    evil.write_text(f"import pathlib\npathlib.Path({str(tmp_path / 'ran')!r}).touch()\n\n\ndef m(r):\n"
                    "    return r.grades.sum(axis=-1) * 0.0\n")
    rows = "".join(f"{run},{t},{evil}:m,0.{t}{i}\n" for i, run in enumerate("abc") for t in range(1, 4))
    (tmp_path / "s.csv").write_text("run,topic,measure,value\n" + rows)
    result = runner.invoke(app, ["analysis", "properties", "--scores", str(tmp_path / "s.csv")])
    assert result.exit_code == 2 and "names read from a file never load code" in result.output
    data = AnalysisData.from_scores(read_scores(tmp_path / "s.csv"))
    with pytest.raises(InputError, match="never load code"):
        get_analysis("properties")(data)
    assert not (tmp_path / "ran").exists()


# --------------------------------------------------------------------------------------------- wrong numbers, exit 0


def test_a_table_of_numbered_topics_is_not_pooled_with_one_that_names_them(tmp_path, demo):
    """Row k of a wide table without a topic column would meet topic "k" of the other table (topic "10" in byte
    order): a correlation of AP on one topic with P@10 on another, silently."""
    col, scores = demo
    table = read_scores(scores, systems=col.systems, topics=col.topics)
    table.to_wide("AP").to_csv(tmp_path / "AP.csv")
    table.to_wide("nDCG@10").to_csv(tmp_path / "nDCG.csv", index=False)
    with pytest.raises(InputError, match=r"nDCG.csv has no topic column .* cannot be pooled with .*AP.csv"):
        read_scores([tmp_path / "AP.csv", tmp_path / "nDCG.csv"])
    with pytest.raises(InputError, match="has no topic column"):
        read_scores([tmp_path / "nDCG.csv", tmp_path / "AP.csv"])
    table.to_wide("AP").to_csv(tmp_path / "AP2.csv", index=False)  # both numbered: row k is topic k in both
    assert read_scores([tmp_path / "AP2.csv", tmp_path / "nDCG.csv"]).measures == ["AP2", "nDCG"]


@pytest.mark.parametrize("name", ["query", "Topic", "QID", "id", "Query_ID", "topic_id"])
def test_a_wide_tables_topic_column_is_known_by_its_usual_names_in_any_case(tmp_path, name):
    """A first column ``query`` was read as a run whose scores were the topic ids (it ranked first, mean 2.0)."""
    (tmp_path / "AP.csv").write_text(f"{name},A,B\n1,0.1,0.2\n2,0.5,0.4\n3,0.3,0.1\n")
    table = read_scores(tmp_path / "AP.csv")
    assert table.systems == ("A", "B") and table.topics == ("1", "2", "3")
    np.testing.assert_array_equal(table.scores["AP"], [[0.1, 0.5, 0.3], [0.2, 0.4, 0.1]])
    frame = pd.DataFrame({"A": [0.1, 0.5, 0.3], "B": [0.2, 0.4, 0.1]}, index=pd.Index(["1", "2", "3"], name=name))
    assert read_scores(frame, measure="AP").systems == ("A", "B")  # a DataFrame indexed by that column alike


def test_tidy_column_names_are_matched_in_any_case(tmp_path):
    (tmp_path / "s.csv").write_text("Run,Topic,Measure,Value\na,1,AP,0.5\nb,1,AP,0.25\n")
    table = read_scores(tmp_path / "s.csv")
    assert table.systems == ("a", "b") and table.measures == ["AP"]


@pytest.mark.parametrize("sep", [",", "\t", " "])
def test_a_wide_tables_all_row_is_left_out_as_in_the_other_layouts(tmp_path, sep):
    """trec_eval's summary row ``all`` (the mean) was kept as a fourth topic: ANOVA counted 4 topics."""
    rows = ["topic A B C", "1 0.1 0.2 0.3", "2 0.5 0.4 0.1", "all 0.3 0.3 0.2", "3 0.3 0.1 0.2"]
    (tmp_path / "AP.txt").write_text("\n".join(r.replace(" ", sep) for r in rows) + "\n")
    table = read_scores(tmp_path / "AP.txt")
    assert table.topics == ("1", "2", "3")
    np.testing.assert_array_equal(table.scores["AP"][0], [0.1, 0.5, 0.3])
    (tmp_path / "bad.txt").write_text("\n".join(r.replace(" ", sep) for r in [*rows, "4 0.1 x 0.1"]) + "\n")
    with pytest.raises(InputError) as error:  # lines are still counted with the summary row left out
        read_scores(tmp_path / "bad.txt")
    assert "bad.txt:6" in str(error.value)


def test_a_wide_table_whose_header_ends_in_a_number_is_not_trec_eval_output(tmp_path):
    """``topic<TAB>bm25<TAB>42`` has three fields, the last a number: it was read as trec_eval output, its measures
    ``topic``, ``1``, ``2``, ``3``."""
    (tmp_path / "AP.tsv").write_text("topic\tbm25\t42\n1\t0.5\t0.3\n2\t0.4\t0.1\n3\t0.2\t0.6\n")
    table = read_scores(tmp_path / "AP.tsv")
    assert table.measures == ["AP"] and table.systems == ("bm25", "42") and table.topics == ("1", "2", "3")


def test_trec_eval_output_that_starts_with_relstring_is_trec_eval_output(tmp_path):
    (tmp_path / "r.eval").write_text("relstring\t1\t10-2\nP_10\t1\t0.3000\nrelstring\t2\t0--1\nP_10\t2\t0.1000\n"
                                     "runid\tall\tbm25\nP_10\tall\t0.2000\n")
    table = read_scores(tmp_path / "r.eval")
    assert table.systems == ("bm25",) and table.measures == ["P_10"]
    np.testing.assert_array_equal(table.scores["P_10"], [[0.3, 0.1]])


def test_a_selection_gives_the_same_numbers_whatever_order_it_is_named_in(demo):
    """``--topic 12 ... --topic 1`` and ``--topic 1 ... --topic 12`` resampled different topic orders: the same
    seed gave different ASLs for the same topics."""
    col, scores = demo
    data = AnalysisData.from_scores(scores, col.systems, topics=col.topics)
    topics, systems = list(col.topics[:12]), list(col.systems[:6])
    forward = data.subset(systems, topics)
    backward = data.subset(systems[::-1], topics[::-1])
    assert forward.topics == backward.topics == topics and forward.systems == backward.systems == systems
    discpower = get_analysis("discpower")
    a, b = (discpower(d, n_resamples=200, seed=5) for d in (forward, backward))
    for x, y in zip(a.tables(), b.tables()):
        pd.testing.assert_frame_equal(x.frame, y.frame)


def test_analysis_data_refuses_missing_scores_by_name(demo):
    """NaN among given scores: the scores analysis averaged system b over 9 topics and said 10."""
    col, scores = demo
    ap = scores["AP"].copy()
    ap[1, 3] = np.nan
    with pytest.raises(InputError, match=rf"1 missing \(NaN\) cell.* run {col.systems[1]!r} on topic "
                                         rf"{col.topics[3]!r}"):
        AnalysisData.from_scores({"AP": ap}, col.systems, topics=col.topics)
    with pytest.raises(InputError, match="on topic 4 of 20"):
        AnalysisData.from_scores({"AP": ap}, col.systems)
