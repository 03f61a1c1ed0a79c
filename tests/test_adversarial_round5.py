"""Round 5 of the adversarial audit: what one command (or the API) did and another did not, mended where every
command goes through — the terminal width, a measure's parameter given twice, memory exhausted past the memory
check, a figure that cannot be written, the options of a study file given on the command line too, the study's
selection of systems and topics, error bars of intervals that do not hold their mean, ids holding whitespace,
correlations against a constant reference, effect sizes of rounding noise, findings that pick one of tied
metrics. Each case asserts the exact result or one clear line, never a traceback."""

from __future__ import annotations

import resource
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from meta_eval.cli import app
from meta_eval.core.errors import InputError

runner = CliRunner()
CLI = [sys.executable, "-c", "from meta_eval.cli import run; run()"]
QRELS = "1 0 a 2\n1 0 b 0\n1 0 c 1\n2 0 a 1\n2 0 e 0\n2 0 f 2\n3 0 a 1\n3 0 b 1\n"


def _scores(tmp_path, systems: int = 4, topics: int = 10):
    """A tidy score table of AP and P@10 (seeded)."""
    rng = np.random.default_rng(3)
    rows = [f"s{s},{t},{m},{rng.random():.4f}" for m in ("AP", "P@10") for s in range(systems)
            for t in range(1, topics + 1)]
    path = tmp_path / "scores.csv"
    path.write_text("run,topic,measure,value\n" + "\n".join(rows) + "\n")
    return path


def _runs(tmp_path) -> tuple:
    (tmp_path / "q").write_text(QRELS)
    folder = tmp_path / "runs"
    folder.mkdir()
    for k, order in enumerate(("abc", "cba", "bac")):
        (folder / f"r{k}").write_text("".join(f"{t} Q0 {d} {i + 1} {9 - i} r{k}\n" for t in (1, 2, 3)
                                              for i, d in enumerate(order)))
    return tmp_path / "q", folder


@pytest.mark.parametrize("width", ["0", "00", "1", "-5", "wide", ""])
@pytest.mark.parametrize("variable", ["COLUMNS", "TERMINAL_WIDTH"])
def test_a_width_too_narrow_or_not_a_number_is_ignored(tmp_path, variable, width):
    """``COLUMNS=0``: every analysis command printed nothing, exit 0; ``COLUMNS=1`` one character a line."""
    result = runner.invoke(app, ["scores", "--scores", str(_scores(tmp_path)), "--no-progress"],
                           env={variable: width})
    assert result.exit_code == 0, result.output
    assert "Mean score of each system" in result.output and "│ s0" in result.output.replace("┃", "│")


@pytest.mark.parametrize("spec", ["RBP(p=0.5,p=0.6)", "nDCG(gain=exp,gain=linear)", "ERR(max_grade=3,max_grade=4)"])
def test_a_measure_parameter_given_twice_is_refused(spec):
    """The last value won (``RBP(p=0.6)`` printed), where an analysis's parameter given twice is refused."""
    from meta_eval.measures.resolver import resolve

    with pytest.raises(InputError, match="given twice"):
        resolve(spec)
    result = runner.invoke(app, ["evaluate", "-m", spec])
    assert result.exit_code == 2 and "given twice" in result.output


def test_memory_exhausted_past_the_check_is_one_line(tmp_path, monkeypatch):
    """A budget the memory check believed (``META_EVAL_MEMORY`` above the machine's) ended in numpy's
    ``_ArrayMemoryError`` traceback, status 1."""
    import meta_eval.cli.common as common

    def exhausted():
        raise MemoryError()

    monkeypatch.setattr(common, "check_environment", exhausted)
    monkeypatch.setenv("META_EVAL_MEMORY", "1000T")
    result = runner.invoke(app, ["discpower", "--scores", str(_scores(tmp_path)), "--no-progress"])
    assert result.exit_code == 1 and result.output.strip().splitlines() == [
        "meta-eval: error: out of memory: the work needed more than the process could get (META_EVAL_MEMORY=1000T "
        "let it start: the memory check believed it); lower the sizes (resamples, splits, draws) or free memory"]


def _file_size_limit() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


@pytest.mark.parametrize("command", [["discpower", "-B", "20"], ["correlation", "-B", "20"], ["split-half"]])
def test_a_figure_that_cannot_be_written_is_one_line_and_leaves_no_folder(tmp_path, command):
    """``ulimit -f``: a table's write error was one line, a figure's a traceback from matplotlib's PDF writer."""
    scores, out = _scores(tmp_path), tmp_path / "out"
    done = subprocess.run([*CLI, *command, "--scores", str(scores), "-o", str(out), "--no-progress"],
                          capture_output=True, text=True, preexec_fn=_file_size_limit, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "cannot write" in done.stderr.strip().splitlines()[-1]
    assert "(File too large)" in done.stderr and not out.exists()


def test_error_bars_of_an_interval_that_does_not_hold_its_mean_start_at_the_mean():
    """A percentile interval of split-half's τ can miss the mean (0.992 [1.000, 1.000]): ``split-half -o`` raised
    matplotlib's "'yerr' must not contain negative values"."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from meta_eval.rendering.figure_style import dodged

    fig, ax = plt.subplots()
    dodged(ax, [1, 2], [0.992, 0.5], [1.0, 0.4], [1.0, 0.7], color="k", marker="o", offset=0.0)
    (_, caps, (bars,)) = ax.containers[0].lines
    segments = bars.get_segments()
    np.testing.assert_allclose(segments[0], [[1, 0.992], [1, 1.0]])  # from the mean to the interval's far end
    np.testing.assert_allclose(segments[1], [[2, 0.4], [2, 0.7]])
    plt.close(fig)


def test_a_study_file_and_the_command_line_may_not_both_set_an_option(tmp_path):
    """The study file's values won, silently, while the manifest recorded the command line's ``--seed 4``."""
    qrels, runs = _runs(tmp_path)
    study = tmp_path / "s.toml"
    study.write_text('[study]\nmetrics = ["AP"]\nseed = 3\nskip = ["informativeness", "properties"]\n'
                     '[study.params.anova]\nmin_d = [0.1]\n'
                     f'[[collection]]\nname = "c1"\nqrels = "{qrels.name}"\nruns = ["{runs.name}"]\ndepth = 50\n')
    base = ["study", "--study-file", str(study), "-o", str(tmp_path / "out"), "--no-progress", "--no-figures"]
    for extra, said in ((["--seed", "4"], "[study] sets seed"), (["-m", "nDCG"], "[study] sets metrics"),
                        (["--depth", "10"], "collection 'c1' sets depth"),
                        (["--anova-min-d", "0.2"], "[study.params] sets anova.min_d")):
        result = runner.invoke(app, [*base, *extra])
        assert result.exit_code == 2 and said in result.output and "also given on the command line" in result.output
        assert not (tmp_path / "out").exists()


def test_one_file_named_twice_and_other_options_given_twice(tmp_path):
    scores = _scores(tmp_path)
    result = runner.invoke(app, ["scores", "--scores", str(scores), "--scores", str(tmp_path / "." / scores.name),
                                 "--no-progress"])
    assert result.exit_code == 0 and "one file, read as one score table" in result.output  # it was a conflict
    result = runner.invoke(app, ["discpower", "--scores", str(scores), "--format", "pdf", "--format", "pdf"])
    assert result.exit_code == 2 and "option --format: pdf is given twice" in result.output
    result = runner.invoke(app, ["evaluate", "-m", "AP", "-o", ""])
    assert result.exit_code == 2 and "--out: the file name is empty" in result.output


def test_standard_input_as_the_qrels_and_a_run_is_refused(tmp_path):
    """``cat qrels | meta-eval evaluate -Q - -``: the run's lines were read as qrels lines, and blamed."""
    done = subprocess.run([*CLI, "evaluate", "-Q", "-", "-", "-m", "AP"], input=QRELS, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip() == (
        "meta-eval: error: standard input (-) is read once: give it as the qrels or as a run, not both")


def test_a_score_tables_measures_are_found_by_any_spelling_of_them(tmp_path):
    """``-m map -a gap`` found no ``AP`` and ``GAP`` in a score table, where the runs' commands take them."""
    scores = _scores(tmp_path)
    for names in (["-m", "ap"], ["-m", "map"], ["-m", "P_10"], ["-m", "AP", "-a", "p@10"]):
        result = runner.invoke(app, ["scores", "--scores", str(scores), *names, "--no-progress"])
        assert result.exit_code == 0, result.output


def test_evaluate_in_trec_eval_layout_prints_all_trec_in_trec_evals_order(tmp_path):
    """``evaluate -q -m all_trec -f trec`` is documented as diffable with trec_eval: it printed unj, rbp, utility
    ... in another order (``meta-eval trec-eval`` prints trec_eval 10's, byte for byte, tests/test_trec_eval10.py)."""
    qrels, runs = _runs(tmp_path)
    run = runs / "r0"
    ours = runner.invoke(app, ["evaluate", "-Q", str(qrels), str(run), "-q", "-m", "all_trec", "-f", "trec"])
    trec = runner.invoke(app, ["trec-eval", "-q", "-m", "all_trec", str(qrels), str(run)])
    assert ours.exit_code == trec.exit_code == 0
    expected = [line for line in trec.output.splitlines() if not line.startswith("relstring")]
    assert ours.output.splitlines() == expected


def test_a_study_studies_only_the_systems_and_topics_selected(tmp_path):
    """``study --system ... --topic ...`` studied every system and topic, exit 0 (its findings equal the full
    collection's): the selection is cut as every analysis command cuts it."""
    import json

    import pandas as pd

    out = tmp_path / "study"
    selection = ["--system", "sys03", "--system", "sys01", "--system", "sys02", *sum((["--topic", t] for t in
                                                                                       ("405", "401", "403")), [])]
    result = runner.invoke(app, ["study", "-o", str(out), *selection, "-B", "20", "--no-figures", "--no-progress",
                                 *sum((["--skip", s] for s in ("informativeness", "incomplete-judgments",
                                                               "reusability", "split-half", "intuitiveness")), [])])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["shape"]["systems"] == 3 and manifest["shape"]["topics"] == 3
    scores = pd.read_csv(out / "scores.csv", dtype=str)
    assert sorted(set(scores["run"])) == ["sys01", "sys02", "sys03"]
    assert sorted(set(scores["topic"])) == ["401", "403", "405"]
    assert "3 systems × 3 topics" in (out / "report.md").read_text()


@pytest.mark.parametrize("where", ["docid", "topic", "qrels"])
def test_an_id_holding_whitespace_is_refused_from_frames_and_dicts(where):
    """A DataFrame's docid ``"a "`` never met its judgment (AP 0, exit 0); a topic ``"2 "`` was scored 0 and
    averaged in. A TREC file cannot hold such an id (its fields are split at whitespace)."""
    import pandas as pd

    import meta_eval as me

    qrels = {"1": {"a": 1, "b": 0}, "2": {"c": 1}}
    run = pd.DataFrame({"qid": ["1", "1", "2"], "docno": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    if where == "docid":
        run.loc[0, "docno"] = "a "
    elif where == "topic":
        run.loc[2, "qid"] = "2\t"
    else:
        qrels = {"1": {"a": 1, "b\x0c": 0}, "2": {"c": 1}}
    with pytest.raises(InputError, match="holds whitespace"):
        me.load_collection(qrels, [run])


def test_tau_ap_against_a_constant_reference_is_undefined():
    """A reference that ranks nothing gave τ_AP = -1 ("reversed"), where τ_b, τ_AP-b and τ_AP-a give NaN."""
    from meta_eval.statistics.correlation.rank import kendall_tau_b, tau_ap, tau_ap_a, tau_ap_b

    flat, ranked_ = [0.5, 0.5, 0.5, 0.5], [0.4, 0.3, 0.2, 0.1]
    for value in (tau_ap(flat, ranked_), tau_ap(ranked_, flat), tau_ap_b(flat, ranked_), tau_ap_a(flat, ranked_),
                  kendall_tau_b(flat, ranked_)):
        assert np.isnan(value)
    assert tau_ap([3, 2, 1], [1, 3, 2]) == 0.0  # a ranked reference as before


def test_a_constant_difference_has_no_effect_size_and_p_zero_within_rounding():
    """0.1 on every topic left an s.d. of 1e-17: Cohen's d_z was 3e15 and scipy warned of cancellation."""
    import warnings

    import meta_eval as me

    for x in (np.array([[0.1, 0.2, 0.3], [0.2, 0.3, 0.4]]), np.array([[0.25, 0.5, 0.75], [0.5, 0.75, 1.0]])):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            row = me.compare({"AP": x}).table.iloc[0]
        assert np.isnan(row["effect_size"]) and row["p_value"] == 0.0


def test_findings_name_every_metric_tied_at_an_end():
    """"Least alike under GAP (τ_b = 0.773)" while AP showed the same 0.773: the first of tied rows was named."""
    import pandas as pd

    from meta_eval.rendering.findings import Quoter, extremes
    from meta_eval.rendering.paper_table import PaperTable

    table = PaperTable(pd.DataFrame({"x": [0.773333, 0.9, 0.773333, 0.5, 0.5]},
                                    index=["GAP", "nDCG", "AP", "Q", "ERR"]), decimals=3)
    assert extremes(Quoter({"t": table}), "t", "x", ascending=True) == ("Q and ERR", "0.500", "nDCG", "0.900")
    assert extremes(Quoter({"t": table}), "t", "x") == ("nDCG", "0.900", "Q and ERR", "0.500")
    alike = PaperTable(pd.DataFrame({"x": [0.773333, 0.7734]}, index=["GAP", "AP"]), decimals=3)
    assert extremes(Quoter({"t": alike}), "t", "x") == ("AP and GAP", "0.773", "AP and GAP", "0.773")  # as shown


def test_the_api_takes_what_the_command_line_takes_and_refuses_what_it_refuses():
    """against as one string (it was split into letters), names given twice, empty selections (0 topics: NaN
    means, silently), numpy selections (numpy's 'truth value is ambiguous'), a nullable column with <NA>
    (Arrow's traceback), confidence as text (a TypeError), a float32 alpha (0.0500000007 moved Δ required)."""
    import pandas as pd

    import meta_eval as me
    from meta_eval.analyses import AnalysisData
    from meta_eval.core.params import ANALYSIS_PARAMS

    col = me.demo_collection()
    assert AnalysisData.from_collection(col, ["AP"], against="GAP").against == ["GAP"]
    x = np.random.default_rng(0).random((3, 4))
    assert AnalysisData.from_scores({"AP": x, "B": x + 1}, ["a", "b", "c"], against="B").against == ["B"]
    with pytest.raises(InputError, match="a is given twice"):
        AnalysisData.from_scores({"AP": x}, ["a", "a", "c"])
    data = AnalysisData.from_collection(col, ["AP"])
    assert data.subset(topics=np.array(col.topics[:3])).topics == list(col.topics[:3])
    for empty in ([], np.array([], dtype=str)):
        with pytest.raises(InputError, match="an empty selection of topics"):
            data.subset(topics=empty)
        with pytest.raises(InputError, match="an empty selection of topics"):
            col.subset(topics=empty)
    assert col.subset(topics=[401, 402]).topics == ["401", "402"]  # ids as text, as AnalysisData.subset takes them
    run = pd.DataFrame({"qid": pd.array([401, None], dtype="Int64"), "docno": ["a", "b"], "score": [2.0, 1.0]})
    with pytest.raises(InputError, match="run1:2: topic id must be a non-empty string or an integer, got <NA>"):
        me.load_collection({"401": {"a": 1}}, [run])
    assert me.compare(col, "AP", confidence="0.9").confidence == 0.9
    with pytest.raises(InputError, match="confidence=1.5 is out of range"):
        me.compare(col, "AP", confidence=1.5)
    assert ANALYSIS_PARAMS["alpha"].validate(np.float32(0.05), "x") == 0.05


def test_a_measure_and_its_trec_eval_spelling_are_one_measure_in_an_analysis():
    """``-m AP -m map`` analysed AP twice (an ANOVA finding named map and said nothing of AP's equal value)."""
    for pair in (["AP", "map"], ["P@10", "P_10"], ["nDCG@10", "ndcg_cut_10"]):
        result = runner.invoke(app, ["discpower", "-m", pair[0], "-m", pair[1], "-B", "10"])
        assert result.exit_code == 2 and f"{pair[0]} and {pair[1]} name one measure" in result.output


def test_an_analysis_keeps_its_own_option_named_like_a_reading_option(tmp_path):
    """``meta-eval ltr --rel-level 2`` was taken as the collection's reading option and dropped: the numbers of
    --rel-level 1, and the manifest said 1."""
    import json

    rng = np.random.default_rng(0)
    lines = [f"{0 if q == 5 else rng.integers(0, 3)} qid:{q} " + " ".join(f"{k}:{rng.random():.3f}" for k in (1, 2, 3))
             for q in range(1, 10) for _ in range(6)]
    (tmp_path / "l.txt").write_text("\n".join(lines) + "\n")
    values = {}
    for level in (1, 2):
        out = tmp_path / f"l{level}"
        result = runner.invoke(app, ["ltr", "AP", "-d", str(tmp_path / "l.txt"), "--folds", "3", "--rel-level",
                                     str(level), "--rounds", "5", "-j", "1", "-o", str(out), "--no-figures"])
        assert result.exit_code == 0, result.output
        assert json.loads((out / "manifest.json").read_text())["params"]["rel_level"] == level
        values[level] = (out / "ltr.csv").read_text()
    assert values[1] != values[2]


def test_informativeness_refuses_a_relevance_level_it_would_ignore(tmp_path):
    result = runner.invoke(app, ["informativeness", "-m", "AP", "-a", "none", "--lists", "4", "-l", "2",
                                 "--no-cache", "--no-progress"])
    assert result.exit_code == 2 and "--rel-level 2 does not apply" in result.output and "--threshold 2" in \
        result.output


def test_ltr_without_a_relevant_test_document_is_one_line(tmp_path):
    """Labels all 0: -o ended in a KeyError traceback, without -o an empty table, exit 0."""
    (tmp_path / "z.txt").write_text("".join(f"0 qid:{q} 1:{d / 10} 2:{q / 10}\n" for q in range(1, 7)
                                            for d in range(4)))
    result = runner.invoke(app, ["ltr", "AP", "-d", str(tmp_path / "z.txt"), "--folds", "3", "--rounds", "3",
                                 "-j", "1", "-o", str(tmp_path / "out")])
    assert result.exit_code == 2 and "no test query has a relevant document" in result.output
    assert not (tmp_path / "out").exists()


def test_a_slowly_saturating_bounded_metric_is_bounded():
    """RBP(p=0.9999) = 1 - p^n still doubles at n = 4096: the growth probe called it unbounded (✗); the probe now
    looks again up to 65,536 documents before it says so. DCG, which grows like log n, stays unbounded."""
    from meta_eval.analyses import AnalysisData, get_analysis

    result = get_analysis("properties")(AnalysisData.from_measures(["RBP(p=0.9999)", "DCG"])).result
    assert result.status("RBP(p=0.9999)", "bounded") == "held"
    assert result.status("DCG", "bounded") == "violated"


def test_err_stays_a_probability_sum_and_takes_no_ignored_gain(tmp_path):
    """ERR(max_grade=2) on grades 0..4 gave 3.40625 (a stop probability of 3.75); ERR(gain=...) with stop=exp
    printed a row of its own with plain ERR's value (the gain map was ignored)."""
    import meta_eval as me

    (tmp_path / "q").write_text("1 0 a 4\n1 0 b 1\n")
    (tmp_path / "r").write_text("1 Q0 a 1 2 R\n1 Q0 b 2 1 R\n")
    col = me.load_collection(tmp_path / "q", [tmp_path / "r"])
    for spec, said in (("ERR(max_grade=2)", "below the qrels' highest grade 4"),
                       ("ERR(stop=linear,max_grade=2)", "below the qrels' highest grade 4"),
                       ("nERR(max_grade=3)", "below the qrels' highest grade 4"),
                       ("ERR(gain=1:3,4:1)", "a gain map applies to stop=linear")):
        with pytest.raises(InputError, match=said):
            me.score(col, spec)
    # R = (2^4 - 1) / 2^4 then (2^1 - 1) / 2^4: ERR = 15/16 + (1/16)(1/16)/2 (Chapelle et al. 2009)
    assert me.score(col, "ERR(max_grade=4)")[0, 0] == pytest.approx(15 / 16 + (1 / 16) * (1 / 16) / 2)
    # linear stop with a decreasing gain map: R = g / (max gain + 1) = 1/4 then 3/4 (NTCIREVAL's form)
    assert me.score(col, "ERR(stop=linear,gain=1:3,4:1)")[0, 0] == pytest.approx(0.25 + 0.75 * 0.75 / 2)


@pytest.mark.parametrize("test", ["bootstrap", "randomisation"])
def test_systems_of_equal_means_get_asl_one_whatever_the_rounding(test):
    """[0.3, 0.7] and [0.5, 0.5]: the mean difference is 0, floating-point sums leave -2.8e-17, and the bootstrap
    gave ASL 0.545 (replicates fell at random either side of a rounding-level t)."""
    from meta_eval.statistics.significance.bootstrap import paired_bootstrap
    from meta_eval.statistics.significance.randomisation import randomisation_test

    run = paired_bootstrap if test == "bootstrap" else randomisation_test
    assert run(np.array([[0.3, 0.7], [0.5, 0.5]]), n_resamples=200).asl[0] == 1.0
    rng = np.random.default_rng(1)
    a = rng.integers(0, 11, 10) / 10
    assert run(np.vstack([a, rng.permutation(a)]), n_resamples=300).asl[0] == 1.0  # the same scores, reordered


def _tidy_table(tmp_path, measures=("AP", "GAP"), name="t.csv", rows=None):
    rng = np.random.default_rng(7)
    lines = rows or [f"s{s},{t},{m},{rng.random():.4f}" for m in measures for s in range(4) for t in range(1, 9)]
    (tmp_path / name).write_text("run,topic,measure,value\n" + "\n".join(lines) + "\n")
    return tmp_path / name


def test_a_score_table_keeps_the_default_references_it_has(tmp_path):
    """``discpower --scores t.csv -m AP`` analysed AP alone, where the runs' command compares AP with GAP and
    nDCG: the table's GAP was dropped (the help says: the references the table has)."""
    result = runner.invoke(app, ["discpower", "--scores", str(_tidy_table(tmp_path)), "-m", "AP", "-B", "20",
                                 "-o", str(tmp_path / "out"), "--no-figures", "--no-progress"])
    assert result.exit_code == 0, result.output
    import pandas as pd

    assert set(pd.read_csv(tmp_path / "out" / "discpower_summary.csv")["metric"]) == {"AP", "GAP"}


def test_a_score_table_holding_one_measure_under_two_names_is_refused(tmp_path):
    """AP and map rows of different values: -m AP and -m map each picked one, and without -m the analyses
    compared the measure with itself."""
    result = runner.invoke(app, ["discpower", "--scores", str(_tidy_table(tmp_path, ("AP", "map"))), "-B", "20"])
    assert result.exit_code == 2 and "one measure under two names, 'AP' and 'map'" in result.output


def test_the_means_of_a_score_table_are_each_measures_own_summary(tmp_path):
    """gm_map from a table was averaged arithmetically (equal to AP's mean): its geometric mean, as from runs."""
    from meta_eval.analyses import AnalysisData, get_analysis
    from meta_eval.inputs.score_tables import read_scores

    table = read_scores(_tidy_table(tmp_path, ("gm_map", "AP")))
    means = get_analysis("scores")(AnalysisData.from_scores(table)).means
    x = table.scores["gm_map"]
    np.testing.assert_allclose(means.loc[table.systems[0], "gm_map"],
                               np.exp(np.mean(np.log(np.maximum(x[0], 1e-5)))), rtol=1e-12)
    np.testing.assert_allclose(means.loc[table.systems[0], "AP"], table.scores["AP"][0].mean(), rtol=1e-12)


def test_a_study_of_scores_and_collections_at_once_is_refused_and_unknown_measures_skip_properties(tmp_path):
    """``--scores`` beside ``--collection`` was ignored, exit 0; a measure only the table's author can compute
    failed the properties stage (exit 1)."""
    qrels, runs = _runs(tmp_path)
    table = _tidy_table(tmp_path, ("mine", "AP"))
    result = runner.invoke(app, ["study", "--scores", str(table), "-c", f"x={qrels}:{runs}", "-o",
                                 str(tmp_path / "s1")])
    assert result.exit_code == 2 and "--scores" in result.output and not (tmp_path / "s1").exists()
    result = runner.invoke(app, ["study", "--scores", str(table), "-m", "mine", "-a", "AP", "-o", str(tmp_path / "s2"),
                                 "-B", "20", "--no-figures", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "meta-eval does not know mine" in (tmp_path / "s2" / "report.md").read_text()


def test_a_study_at_another_relevance_level_lists_informativeness_as_not_applicable():
    """``study -l 2`` ran informativeness into its refusal: the study failed, exit 1, for a legitimate option."""
    import meta_eval as me
    from meta_eval.analyses import AnalysisData
    from meta_eval.orchestration.study import StudyOptions, study_plan

    data = AnalysisData.from_collection(me.demo_collection(rel_level=2), ["AP", "GAP"])
    plan, not_applicable = study_plan(data, StudyOptions(metrics=("AP",), against=("GAP",)).check())
    assert "informativeness" not in [decl.name for decl, _ in plan]
    assert "--rel-level 2 does not apply" in not_applicable["informativeness"]


def test_variants_of_round_5_through_other_entrances(tmp_path):
    """Tukey HSD gave equal means ASL 0.885; Collection.subset kept the order named (the same seed, other p);
    ``-m AP -a map`` compared AP with itself (τ = 1.000); ``ndcg.2=9,2=1`` took a gain trec_eval 10 does not."""
    import meta_eval as me
    from meta_eval.measures.resolver import resolve
    from meta_eval.statistics.significance.tukey import tukey_hsd

    same = np.array([[0.5, 0.4, 0, 0.4, 0.1, 0.3, 0], [0.5, 0, 0.1, 0, 0.4, 0.4, 0.3]])
    assert tukey_hsd(same, n_resamples=200).asl[0] == 1.0
    col = me.demo_collection()
    topics = list(col.topics[:9])
    forward, backward = col.subset(topics=topics), col.subset(topics=topics[::-1], systems=col.systems[::-1])
    assert forward.topics == backward.topics == topics and backward.systems == col.systems
    with pytest.raises(InputError, match="selection of topics: 401 is given twice"):
        col.subset(topics=["401", "401"])
    result = runner.invoke(app, ["correlation", "-m", "AP", "-a", "map", "-B", "0"])
    assert result.exit_code == 2 and "AP and map name one measure (AP)" in result.output
    for spec in ("ndcg.2=9,2=1", "ndcg.01=3,1=4", "rbp.p=0.5,p=0.6"):
        with pytest.raises(InputError, match="given twice"):
            resolve(spec)


def test_names_are_escaped_alike_in_every_markdown_and_latex_table():
    """A run named ``a|b`c``: evaluate's Markdown made the backticks a code span that swallowed the cell border,
    and ``<script>`` passed as HTML; its LaTeX printed ``|`` as an em dash (the reports' own escaping did not)."""
    from meta_eval.cli.evaluate import _md_escape, _tex_escape
    from meta_eval.rendering.paper_table import latex_escape, markdown_escape

    name = "a|b`c <script> & x"
    assert _md_escape(name) == markdown_escape(name) == r"a\|b\`c &lt;script&gt; &amp; x"
    assert _tex_escape(name) == latex_escape(name) == \
        r"a\textbar{}b\textasciigrave{}c \ensuremath{<}script\ensuremath{>} \& x"


def test_parameters_from_toml_and_the_api_are_of_their_declared_kind():
    """``group_by = 5`` in a study file passed the check and crashed the stage (TypeError); ``all_pairs=2`` was
    taken as true; a measure's own parameters inside an analysis spec were split at their commas."""
    from meta_eval.analyses import get_analysis, parse_analysis

    with pytest.raises(InputError, match="group_by=5 is not text"):
        get_analysis("reusability").bind({"group_by": 5})
    for value in (2, 0.5, []):
        with pytest.raises(InputError, match="is not true or false; allowed: true or false"):
            get_analysis("compare").bind({"all_pairs": value})
    assert get_analysis("compare").bind({"all_pairs": "yes"})["all_pairs"] is True
    _, params = parse_analysis("informativeness(predict=nDCG(gain=1:3,2:9),lists=20,no_cache=true)")
    assert params["predict"] == ("nDCG(gain=1:3,2:9)",) and params["lists"] == 20
