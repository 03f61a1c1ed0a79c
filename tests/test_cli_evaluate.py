"""``meta-eval evaluate`` end to end (typer's CliRunner, in process): formats, precision, -q, errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import meta_eval as me
from meta_eval.cli import app
from tests.conftest import shared_path

runner = CliRunner()


def _run(*args: str):
    return runner.invoke(app, ["evaluate", *args])


def test_evaluate_demo_table():
    result = _run("-m", "AP", "-m", "GAP(g=0.5,0.5)")
    assert result.exit_code == 0, result.output
    assert "sys32" in result.output and "GAP(g=0.5,0.5)" in result.output


def test_evaluate_csv_is_exact(tmp_path):
    """Machine formats keep every float: the CSV values are the library's, bit for bit."""
    out = tmp_path / "r.csv"
    result = _run("-m", "nDCG@10", "-q", "-o", str(out))  # format from the extension
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out, dtype={"topic": str})
    assert list(df.columns) == ["run", "topic", "measure", "value", "summary"]
    col = me.demo_collection()
    scores = me.score(col, "nDCG@10")
    per_topic = df[~df.summary].pivot(index="run", columns="topic", values="value").loc[col.systems, col.topics]
    np.testing.assert_array_equal(per_topic.to_numpy(), scores)
    means = df[df.summary].set_index("run").value.loc[col.systems].to_numpy()
    np.testing.assert_array_equal(means, me.aggregate(scores, me.resolve("nDCG@10")[0]))  # topics added in order


@pytest.mark.parametrize("suffix", [".tsv", ".json", ".parquet"])
def test_every_machine_format_round_trips_exactly(tmp_path, suffix):
    out = tmp_path / f"r{suffix}"
    assert _run("-m", "AP", "-m", "RBP(p=0.5)", "-q", "-o", str(out)).exit_code == 0
    if suffix == ".tsv":
        df = pd.read_csv(out, sep="\t", dtype={"topic": str})
    elif suffix == ".json":
        df = pd.DataFrame(json.loads(out.read_text()))
    else:
        df = pd.read_parquet(out)
    expected = me.evaluate(me.demo_collection(), ["AP", "RBP(p=0.5)"])
    assert len(df) == len(expected)
    np.testing.assert_array_equal(df.value.to_numpy(), expected.value.to_numpy())
    assert df.summary.tolist() == expected.summary.tolist()


def test_format_option_wins_over_extension(tmp_path):
    out = tmp_path / "r.csv"
    assert _run("-m", "map", "-f", "trec", "-o", str(out)).exit_code == 0
    assert out.read_text().splitlines()[0].startswith("runid")


@pytest.mark.parametrize("fmt", ["table", "csv", "tsv", "json", "md", "tex", "trec"])
def test_per_topic_rows_in_every_format(fmt):
    col = me.demo_collection()
    with_q, without = _run("-m", "AP", "-f", fmt, "-q"), _run("-m", "AP", "-f", fmt)
    assert with_q.exit_code == 0 and without.exit_code == 0, with_q.output + without.output
    topic = col.topics[1]
    assert topic in with_q.output and topic not in without.output
    assert col.systems[-1] in without.output


def test_printed_formats_round_to_digits():
    col = me.demo_collection()
    value = me.evaluate(col, "AP", per_topic_rows=False).value.iloc[0]
    assert f"{value:.6f}" in _run("-m", "AP", "--digits", "6").output
    assert f"{value:.2f}" in _run("-m", "AP", "-f", "md", "--digits", "2").output
    tex = _run("-m", "AP", "-f", "tex").output
    assert r"\toprule" in tex and f"{value:.4f}" in tex


def test_unwritable_output_fails_before_any_work(tmp_path):
    for bad in ("/proc/version/x.csv", str(tmp_path / "missing" / "x.csv"), str(tmp_path)):
        result = _run("-m", "AP", "-o", bad, "-Q", str(tmp_path / "no-such-qrels"), str(tmp_path / "no-run"))
        assert result.exit_code == 2, result.output
        assert "--out" in result.output and "Traceback" not in result.output
        assert "no-such-qrels" not in result.output  # the files were never read


def test_unknown_extension_and_binary_stdout_are_clear_errors():
    result = _run("-m", "AP", "-o", "results.xlsx")
    assert result.exit_code == 2 and ".xlsx" in result.output and "-f" in result.output
    result = _run("-m", "AP", "-f", "parquet")
    assert result.exit_code == 2 and "-o" in result.output


def test_bad_measure_fails_before_reading_files(tmp_path):
    result = _run("-m", "RBP(p=1.5)", "-Q", str(tmp_path / "no-such-qrels"), str(tmp_path / "no-run"))
    assert result.exit_code == 2
    assert "p=1.5" in result.output and "(0, 1)" in result.output and "no-such-qrels" not in result.output
    result = _run("-m", "nDGC@10")
    assert result.exit_code == 2 and "did you mean nDCG" in result.output


def test_rel_level_above_the_grades_warns():
    result = _run("-m", "AP", "-l", "3")
    assert result.exit_code == 0
    assert "warning: --rel-level 3 is above the highest grade in the qrels (2)" in result.output


def test_topic_named_all_is_kept_apart_from_the_summary(tmp_path):
    qrels = tmp_path / "qrels"
    qrels.write_text("all 0 a 1\nall 0 b 0\n7 0 c 1\n7 0 d 0\n")
    run = tmp_path / "run"
    run.write_text("all Q0 b 1 2.0 r\nall Q0 a 2 1.0 r\n7 Q0 c 1 2.0 r\n")
    out = tmp_path / "r.csv"
    assert _run("-m", "AP", "-q", "-Q", str(qrels), str(run), "-o", str(out)).exit_code == 0
    df = pd.read_csv(out, dtype={"topic": str})
    assert df[(df.topic == "all") & ~df.summary].value.item() == 0.5  # the topic named "all"
    assert df[df.summary].value.item() == 0.75  # the mean over topics "all" and "7"
    table = _run("-m", "AP", "-q", "-Q", str(qrels), str(run))
    assert table.exit_code == 0 and "Summary over topics" in table.output
    trec = _run("-m", "AP", "-q", "-f", "trec", "-Q", str(qrels), str(run))
    assert trec.exit_code == 2 and "named 'all'" in trec.output
    assert _run("-m", "AP", "-f", "trec", "-Q", str(qrels), str(run)).exit_code == 0  # no per-topic lines: fine


def test_evaluate_trec_layout_matches_trec_eval():
    base = shared_path("data", "trec_eval-test")
    result = _run("-Q", str(base / "qrels.test"), str(base / "results.test"),
                  "-m", "map", "-m", "gm_map", "-m", "P.5,10", "-m", "ndcg_cut.10", "-f", "trec", "-q")
    assert result.exit_code == 0, result.output
    expected = {tuple(line.split()[:2]): line.split()[2] for line in (base / "out.test.aq").read_text().splitlines()}
    lines = [line for line in result.output.splitlines() if line.strip()]
    for line in lines:
        measure, topic, value = line.split()
        assert expected[(measure, topic)] == value
    assert not any(line.startswith("gm_map") and "\tall\t" not in line for line in lines)  # as trec_eval: no per-topic
    assert len(lines) == 3 * 4 + 5 + 2


def test_evaluate_reports_bad_input_without_traceback(tmp_path):
    bad = tmp_path / "run"
    bad.write_text("1 Q0 a 1 notanumber r\n")
    qrels = tmp_path / "qrels"
    qrels.write_text("1 0 a 1\n")
    result = _run("-Q", str(qrels), str(bad))
    assert result.exit_code == 2
    assert "run:1: score must be a number" in result.output and "Traceback" not in result.output


def test_plugin_measures_and_shared_options(tmp_path):
    plugin = tmp_path / "mine.py"
    plugin.write_text("def first_relevant(r):\n    '''1 if the first document is relevant.'''\n"
                      "    return r.relevant()[..., 0].astype(float)\n")
    out = tmp_path / "r.csv"
    result = _run("--metric", f"{plugin}:first_relevant", "-m", "P.1", "--no-progress", "-o", str(out))
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out).pivot(index="run", columns="measure", values="value")
    np.testing.assert_array_equal(df["first_relevant"], df["P_1"])  # the same quantity, two ways


@settings(deadline=None, max_examples=60)
@given(data=st.data())
def test_console_table_is_tabulates_simple_outline(data):
    """The boxed console table prints as tabulate's simple_outline layout (the reference), for run and topic ids
    of ASCII, wide (CJK) and combining characters, NaN cells and no rows at all."""
    from tabulate import tabulate

    from meta_eval.cli.evaluate import _cell, _console, _Table

    text = st.lists(st.sampled_from(list("ab_-.9Z") + ["日", "本", "é", "e\u0301"]), min_size=1, max_size=8).map("".join)
    n_keys = data.draw(st.integers(1, 2))
    columns = data.draw(st.lists(text, min_size=1, max_size=4))
    keys = data.draw(st.lists(st.tuples(*[text] * n_keys), max_size=5))
    values = np.array(data.draw(st.lists(st.lists(st.one_of(st.floats(-5, 5), st.just(np.nan)), min_size=len(columns),
                                                  max_size=len(columns)), min_size=len(keys), max_size=len(keys))),
                      dtype=float).reshape(len(keys), len(columns))
    table = _Table("Title", ["run", "topic"][:n_keys], keys, columns, values)
    rows = [[*k, *(_cell(v, 4) for v in row)] for k, row in zip(keys, values)]
    expected = tabulate(rows, headers=[*table.key_names, *columns], tablefmt="simple_outline", disable_numparse=True,
                        colalign=["left"] * n_keys + ["right"] * len(columns))
    assert _console(table, 4) == f"{'Title':^{len(expected.split(chr(10))[0])}}\n{expected}\n"
