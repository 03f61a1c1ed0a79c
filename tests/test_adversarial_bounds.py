"""Issue 21, bounds before allocation and degenerate statistics.

* one declaration per analysis parameter (:mod:`meta_eval.core.params`): every randomised procedure refuses a bad seed
  with the parameter and its domain, never numpy's traceback;
* one memory check (:mod:`meta_eval.core.memory_budget`): a budget whose arrays cannot fit is refused with both figures before
  anything is allocated, in the library, in each command and in a study before its first stage;
* zero variance is zero: identical systems have no system effect, undefined F and ω², no topic-set size.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meta_eval as me
from meta_eval.statistics.anova import two_way_anova
from meta_eval.statistics.correlation.systems import correlate_systems
from meta_eval.statistics.incomplete_judgments import incomplete_judgments, judgment_masks
from meta_eval.statistics.maxent.pr_inference import g_grid
from meta_eval.statistics.significance.bootstrap import paired_bootstrap
from meta_eval.statistics.significance.randomisation import randomisation_test
from meta_eval.statistics.stability import error_rates, split_half, swap_rates
from meta_eval.statistics.topic_set_size import topic_set_size
from meta_eval.core.errors import InputError

CLI = [sys.executable, "-c", "from meta_eval.cli import run; run()"]
rng = np.random.default_rng(7)
SCORES = rng.random((6, 12))


def _cli(*args, env=None, cwd=None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**os.environ, **(env or {})})


# ------------------------------------------------------------------------------------------------ seeds


def _randomised():
    from meta_eval.statistics.correlation import correlate_systems
    from meta_eval.statistics.significance.bootstrap import paired_bootstrap, unpaired_bootstrap
    from meta_eval.statistics.significance.randomisation import randomisation_test
    from meta_eval.statistics.significance.tukey import tukey_null
    from meta_eval.statistics.stability import error_rates, split_half, swap_rates
    from meta_eval.core.resampling import bootstrap_indices

    x = SCORES
    return {
        "bootstrap_indices": lambda seed: bootstrap_indices(12, 50, seed),
        "paired_bootstrap": lambda seed: paired_bootstrap(x, n_resamples=50, seed=seed),
        "unpaired_bootstrap": lambda seed: unpaired_bootstrap(x, n_resamples=50, seed=seed),
        "randomisation_test": lambda seed: randomisation_test(x, n_resamples=50, seed=seed),
        "tukey_null": lambda seed: tukey_null(x, n_resamples=50, seed=seed),
        "split_half": lambda seed: split_half(x, n_splits=5, seed=seed),
        "swap_rates": lambda seed: swap_rates(x, n_splits=5, seed=seed),
        "error_rates": lambda seed: error_rates(x, n_sets=5, seed=seed),
        "correlate_systems": lambda seed: correlate_systems({"a": x, "b": x[::-1]}, n_resamples=20, seed=seed),
        "judgment_masks": lambda seed: judgment_masks(me.demo_collection(), (0.5,), 2, seed=seed),
    }


@pytest.mark.parametrize("name", sorted(_randomised()))
@pytest.mark.parametrize("seed, problem", [(-1, "is out of range"), (2**60, r"is too large \(at most 2\^53\)"),
                                           (1.5, "is not an integer"), (True, "is not a number"),
                                           ("seven", r"\(not an integer\)"), (float("nan"), "is not finite")])
def test_every_randomised_procedure_refuses_a_bad_seed(name, seed, problem):
    with pytest.raises(InputError, match=rf"parameter seed=.*{problem}; allowed: integer in \[0, 9007199254740992\]"):
        _randomised()[name](seed)


@pytest.mark.parametrize("name", sorted(_randomised()))
def test_the_same_seed_gives_the_same_numbers(name):
    def numbers(result):
        if isinstance(result, np.ndarray):
            return result
        for attr in ("asl", "splits", "table", "by_size"):
            if hasattr(result, attr):
                value = getattr(result, attr)
                return value.select_dtypes("number").to_numpy() if isinstance(value, pd.DataFrame) else value
        return result.select_dtypes("number").to_numpy()

    run = _randomised()[name]
    np.testing.assert_array_equal(numbers(run(3)), numbers(run(3)))
    assert run(2**53) is not None  # the largest seed is accepted


@pytest.mark.parametrize("command", ["discpower", "compare", "correlation", "split-half", "incomplete-judgments",
                                     "study", "ltr"])
def test_seed_out_of_range_is_an_option_error_before_any_work(command):
    result = _cli(command, "--seed", "-1")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--seed" in result.stderr and "-1 is not in the range 0<=x<=9007199254740992" in result.stderr


# ------------------------------------------------------------------------------------------------ memory


@pytest.fixture
def memory_limit(monkeypatch):
    monkeypatch.setenv("META_EVAL_MEMORY", "64M")
    return 64 << 20


@given(st.integers(2, 200), st.integers(1, 10**12))
@settings(max_examples=40, deadline=None)
def test_a_bootstrap_is_refused_exactly_when_its_estimate_exceeds_the_memory(n_topics, n_resamples):
    import os

    from meta_eval.core.resampling import bootstrap_bytes, bootstrap_indices

    os.environ["META_EVAL_MEMORY"] = "64M"
    try:
        if bootstrap_bytes(n_topics, n_resamples) > 64 << 20:
            with pytest.raises(InputError, match=r"would need about .* of memory; 64.0 MB is available \(lower "):
                bootstrap_indices(n_topics, n_resamples, 0)
        elif n_topics * n_resamples < 10**6:  # small enough to draw here
            assert bootstrap_indices(n_topics, n_resamples, 0).shape == (n_topics, n_resamples)
    finally:
        del os.environ["META_EVAL_MEMORY"]


@pytest.mark.parametrize("call, option", [
    (lambda: paired_bootstrap(SCORES, n_resamples=10**11), "--resamples/-B"),
    (lambda: randomisation_test(rng.random((3, 60)), n_resamples=10**11), "--resamples/-B"),
    (lambda: split_half(SCORES, n_splits=10**11), "--splits"),
    (lambda: swap_rates(SCORES, n_splits=10**11), "n_splits"),
    (lambda: error_rates(SCORES, n_sets=10**11), "n_sets"),
    (lambda: correlate_systems({"a": SCORES, "b": SCORES[::-1]}, n_resamples=10**9),
     "--resamples/-B"),
    (lambda: judgment_masks(me.demo_collection(), (0.5,), 10**9), "--draws"),
])
def test_oversized_budgets_are_refused_before_allocating(memory_limit, call, option):
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=rf"would need about .* of memory; 64.0 MB is available \(lower "
                                             rf"{option}"):
            call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 << 20  # nothing of the request was allocated


WIDE = rng.random((40, 20))


@pytest.mark.parametrize("estimate, run", [
    ("bootstrap", lambda: paired_bootstrap(SCORES, n_resamples=200_000, seed=1)),
    ("split_half", lambda: split_half(SCORES, sizes=[3], n_splits=200_000, seed=1)),
    ("split_half_wide", lambda: split_half(WIDE, n_splits=20_000, seed=1)),
    ("judgments", lambda: incomplete_judgments(me.demo_collection(), ["AP", "nDCG"], n_draws=300, jobs=1)),
])
def test_the_estimates_are_what_the_analyses_hold(estimate, run):
    """The estimate is within a factor of the measured peak (tracemalloc sees numpy's allocations): the check
    refuses what would not fit, and lets through what would."""
    from meta_eval.statistics.stability import split_half_bytes
    from meta_eval.statistics.incomplete_judgments import masks_bytes
    from meta_eval.core.resampling import bootstrap_bytes

    demo = me.demo_collection()
    expected = {"bootstrap": bootstrap_bytes(12, 200_000), "split_half": split_half_bytes(6, 12, 200_000, 1),
                "split_half_wide": split_half_bytes(40, 20, 20_000, 10),
                "judgments": masks_bytes(len(demo.judgments), 300, 9, 32, 20, 2)}[estimate]
    tracemalloc.start()
    try:
        run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0.4 * expected < peak < 1.5 * expected


def test_memory_sources(monkeypatch):
    from meta_eval.core import memory_budget as memory

    monkeypatch.setenv("META_EVAL_MEMORY", "1.5G")
    assert memory.available_bytes() == int(1.5 * 2**30)
    monkeypatch.setenv("META_EVAL_MEMORY", "lots")
    with pytest.raises(InputError, match="META_EVAL_MEMORY must be a size such as 2G, 500M or a number of bytes, "
                                         "got 'lots'"):
        memory.available_bytes()
    monkeypatch.delenv("META_EVAL_MEMORY")
    assert 0 < memory.available_bytes() < 1 << 50


@pytest.mark.parametrize("text, size", [("2G", 2 << 30), ("500MiB", 500 << 20), ("0.5K", 512), (".5k", 512),
                                        (" 7 ", 7), ("3B", 3), ("0.5", "at least one byte"), ("0", "at least one byte"),
                                        ("1e3", "a size"), ("", "a size"), ("-1G", "a size"), ("nan", "a size"),
                                        ("2 GB", 2 << 30), ("2Gi", "a size")])
def test_one_reading_of_a_size_for_the_option_and_the_environment(text, size, monkeypatch):
    """--memory and META_EVAL_MEMORY read sizes alike (they had a parser each: 0.5K was a size for one of them)."""
    from meta_eval.cli.evaluate import memory_bytes
    from meta_eval.core.memory_budget import configured_bytes

    monkeypatch.setenv("META_EVAL_MEMORY", text)
    if isinstance(size, int):
        assert memory_bytes(text) == size and configured_bytes() == size
        return
    with pytest.raises(InputError, match=f"--memory must be {size}"):
        memory_bytes(text)
    if text:  # an empty variable is an unset one
        with pytest.raises(InputError, match=f"META_EVAL_MEMORY must be {size}"):
            configured_bytes()


@pytest.mark.parametrize("command", [["measures", "AP"], ["evaluate", "-m", "AP", "--no-progress"],
                                     ["trec-eval", "-m", "map", "q", "r"]])
@pytest.mark.parametrize("variable, value", [("META_EVAL_MEMORY", "garbage"), ("META_EVAL_PROGRESS", "sometimes")])
def test_every_command_checks_the_environment_it_may_read(command, variable, value):
    """A bad setting is refused by every command at its start (evaluate and trec-eval ignored it, discpower refused
    it): one line, status 2."""
    from typer.testing import CliRunner

    from meta_eval.cli import app

    result = CliRunner().invoke(app, command, env={variable: value})
    assert result.exit_code == 2 and f"{variable} must be" in result.output and "Traceback" not in result.output


def test_address_space_limit_is_respected():
    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, resource.RLIM_INFINITY));"
            "from meta_eval.core import memory_budget as memory; print(memory.available_bytes())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and 0 < int(out.stdout) < 3 << 30


@pytest.mark.parametrize("args, message", [
    (["discpower", "-B", "99999999999"], "a bootstrap of 99,999,999,999 replicates over 20 topics would need"),
    (["compare", "--baseline", "sys01", "--test", "bootstrap", "-B", "99999999999", "-o"], "a bootstrap of 99,999"),
    (["correlation", "-m", "AP", "-m", "nDCG", "-B", "99999999999"], "bootstrap intervals from 99,999,999,999"),
    (["split-half", "--splits", "1000000000"], "split-half with 1,000,000,000 splits of 20 topics would need"),
    (["incomplete-judgments", "--draws", "999999999"], "999,999,999 draws of reduced qrels"),
    (["informativeness", "--g-grid", "1e-9"], "--g-grid=1e-09 gives 1,000,000,001 points"),
])
def test_commands_refuse_oversized_budgets_with_the_figure(tmp_path, args, message):
    out = tmp_path / ("out.csv" if args[0] == "compare" else "out")
    result = _cli(*args, *([] if args[-1] == "-o" else ["-o"]), out)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert message in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("option, value, message", [
    ("--resamples", "99999999999", "a bootstrap of 99,999,999,999 replicates"),
    ("--split-half-splits", "999999999", "split-half with 999,999,999 splits"),
    ("--incomplete-judgments-draws", "999999999", "999,999,999 draws of reduced qrels"),
])
def test_a_study_refuses_an_oversized_budget_before_its_first_stage(tmp_path, option, value, message):
    result = _cli("study", option, value, "-o", tmp_path / "study", "--no-progress")
    assert result.returncode == 2 and message in result.stderr and "(lower " + option.split("/")[0] in \
        result.stderr.replace("--resamples/-B", "--resamples")
    assert "stage" not in result.stderr and not (tmp_path / "study").exists()


# ------------------------------------------------------------------------------------------------ domains


@pytest.mark.parametrize("step, message", [
    (0.6, "does not divide 1 into equal parts"), (0.3, "does not divide 1 into equal parts"),
    (-0.1, "is out of range"), (0.0, "is out of range"), (1.5, "is out of range"), (float("nan"), "is out of range"),
    (1e-9, "gives 1,000,000,001 points"),
])
def test_g_grid_steps_outside_the_domain_are_refused(step, message):
    with pytest.raises(InputError, match=message):
        g_grid(step)


@given(st.integers(1, 1000))
def test_every_g_grid_point_is_a_distribution(n):
    grid = g_grid(1 / n)
    assert len(grid) == n + 1 and grid[0] == (0.0, 1.0) and grid[-1] == (1.0, 0.0)
    for g in grid:
        assert min(g) >= 0 and abs(sum(g) - 1) < 1e-9


@pytest.mark.parametrize("values, message", [
    (["-0.1"], "is out of range"), (["0.6"], "does not divide 1"), (["1_0"], "is out of range"),
    (["0.5,0.6"], "is not a valid float"), (["abc"], "is not a valid float"),
])
def test_g_grid_option_is_checked_before_any_file_is_read(tmp_path, values, message):
    args = [a for v in values for a in ("--g-grid", v)]
    result = _cli("informativeness", "-Q", tmp_path / "absent-qrels", tmp_path / "absent-run", *args)
    assert result.returncode == 2 and message in result.stderr and "absent" not in result.stderr


@pytest.mark.parametrize("threshold", ["5", "-1.5", "nan"])
def test_incomplete_judgments_threshold_is_checked(threshold):
    result = _cli("incomplete-judgments", "--threshold", threshold)
    assert result.returncode == 2 and "Traceback" not in result.stderr and "threshold" in result.stderr
    with pytest.raises(InputError, match="parameter threshold="):
        incomplete_judgments(me.demo_collection(), ["AP"], fractions=(0.5,), n_draws=1).min_fraction(
            float(threshold))


# ------------------------------------------------------------------------------------------------ zero variance


@given(st.integers(2, 6), st.integers(2, 12), st.integers(0, 2**32 - 1), st.floats(1e-6, 1e6))
@settings(max_examples=50, deadline=None)
def test_identical_systems_have_no_system_effect(n_sys, n_top, seed, scale):
    row = np.random.default_rng(seed).random(n_top) * scale
    res = two_way_anova({"m": np.tile(row, (n_sys, 1))})
    t = res.table.set_index("effect")
    assert t.loc["system", "sum_sq"] == 0.0 and t.loc["residual", "sum_sq"] == 0.0
    assert np.isnan(t.loc["system", ["F", "p_value", "omega_sq"]].astype(float)).all()
    assert res.residual_variance["m"] == 0.0
    assert res.pairs()["effect_size"].isna().all()
    tss = topic_set_size(res.residual_variance).table
    assert tss["n_topics"].isna().all() and tss["power"].isna().all()


@given(st.integers(2, 6), st.integers(2, 12), st.integers(0, 2**32 - 1))
@settings(max_examples=30, deadline=None)
def test_constant_shifts_are_a_perfect_system_effect(n_sys, n_top, seed):
    gen = np.random.default_rng(seed)
    x = gen.random(n_top)[None, :] + np.arange(n_sys)[:, None] * 0.125  # exact in binary
    t = two_way_anova({"m": x}).table.set_index("effect")
    assert t.loc["residual", "sum_sq"] == 0.0
    assert t.loc["system", "F"] == np.inf and t.loc["system", "p_value"] == 0.0 and t.loc["system", "omega_sq"] == 1


def test_anova_of_real_variation_matches_statsmodels_after_the_zero_rule():
    smf = pytest.importorskip("statsmodels.formula.api")
    sm = pytest.importorskip("statsmodels.api")
    frame = pd.DataFrame([(f"s{s}", f"t{t}", SCORES[s, t]) for s in range(6) for t in range(12)],
                         columns=["system", "topic", "score"])
    ref = sm.stats.anova_lm(smf.ols("score ~ C(system) + C(topic)", data=frame).fit())
    ours = two_way_anova({"m": SCORES}).table.set_index("effect")
    assert ours.loc["system", "F"] == pytest.approx(ref.loc["C(system)", "F"], rel=1e-10)
    assert ours.loc["residual", "sum_sq"] == pytest.approx(ref.loc["Residual", "sum_sq"], rel=1e-10)


def test_a_study_of_identical_systems_completes_and_says_undefined(tmp_path):
    import gzip

    demo = Path(me.__file__).resolve().parents[1] / "data" / "demo"
    run = gzip.decompress((demo / "runs" / "sys01.gz").read_bytes()).decode()
    (tmp_path / "runs").mkdir()
    for i in range(3):
        (tmp_path / "runs" / f"r{i}").write_text(run.replace("sys01", f"copy{i}"))
    result = _cli("study", "-Q", demo / "qrels.txt", tmp_path / "runs", "-o", tmp_path / "study", "--no-progress",
                  "--skip", "informativeness", "--jobs", "1")
    assert result.returncode == 0, result.stderr
    assert "RuntimeWarning" not in result.stderr and "Traceback" not in result.stderr
    anova = pd.read_csv(tmp_path / "study" / "anova.csv")
    system = anova[anova.effect == "system"]
    assert (system.sum_sq == 0).all() and system.F.isna().all() and system.omega_sq.isna().all()
    assert pd.read_csv(tmp_path / "study" / "topic_set_size.csv")["n_topics"].isna().all()


@pytest.mark.parametrize("factor", [1e307, 1e-310, -1e200])
def test_scores_the_analyses_cannot_square_are_refused_everywhere(tmp_path, factor):
    """Finite scores of 1e307 gave p = 1 for every pair and τ_AP = -1, scores of 1e-310 p = 0 and Δ/σ = inf, exit 0:
    every entrance refuses them (a score table with its line, arrays, compare, a metric plug-in); 0 is a score."""
    from meta_eval.analyses import AnalysisData
    from meta_eval.core.errors import PluginError
    from meta_eval.inputs.score_tables import read_scores
    from meta_eval.statistics.significance.discriminative_power import discriminative_power

    x = np.random.default_rng(0).random((4, 5)) + 0.5
    x[0, 0] = 0.0
    scaled = x * factor
    problem = "out of the scale the analyses can square"
    (tmp_path / "AP.csv").write_text("topic,a,b,c,d\n" + "".join(
        f"{t},{','.join(repr(float(v)) for v in scaled[:, t])}\n" for t in range(5)))
    with pytest.raises(InputError, match=rf"AP.csv:3: the score of run 'a' {re.escape(repr(float(scaled[0, 1])))}, "
                                         f"{problem}"):
        read_scores(tmp_path / "AP.csv")
    with pytest.raises(InputError, match=f"the scores of 'AP': .*{problem}.*run 'a', topic 2 of 5"):
        AnalysisData.from_scores({"AP": scaled}, ["a", "b", "c", "d"])
    with pytest.raises(InputError, match=f"measure AP: scores: .*{problem}"):
        me.compare({"AP": scaled})
    with pytest.raises(InputError, match=problem):
        discriminative_power({"AP": scaled, "P": x}, n_resamples=10)
    me.compare({"AP": x})  # in scale, 0 included
    plugin = tmp_path / "scaled.py"
    plugin.write_text(f"import numpy as np\n\n\ndef scaled(r):\n    return np.full(r.shape, {factor!r})\n")
    with pytest.raises(PluginError, match=f"returned {re.escape(repr(factor))}, {problem}"):
        me.score(me.demo_collection(), f"{plugin}:scaled")


def test_the_python_api_refuses_what_the_command_line_refuses():
    """depth=nan scored every AP 0, depth=1.5 acted as 2 and depth=True as 1; rel_level=nan, measures=None, a Series
    or a list of numbers as score tables raised bare ValueErrors/TypeErrors; n_resamples=0 silently meant 1000."""
    from meta_eval.inputs.score_tables import read_scores

    qrels, runs = me.demo_paths()
    for options in ({"depth": float("nan")}, {"depth": 1.5}, {"depth": True}, {"depth": 0}):
        with pytest.raises(InputError, match="depth must be a positive integer"):
            me.load_collection(qrels, runs, **options)
    for level in (float("nan"), 1.5, False):
        with pytest.raises(InputError, match="rel_level must be an integer"):
            me.load_collection(qrels, runs, rel_level=level)
    assert me.load_collection(qrels, runs, depth=20.0).depth == 20  # a whole number written as a float
    col = me.demo_collection()
    for measures in (None, 5):
        with pytest.raises(InputError, match="measures are given by name"):
            me.score(col, measures)
    for source in (pd.Series([0.1, 0.2]), [1, 2, 3]):
        with pytest.raises(InputError, match="scores are read from files, DataFrames"):
            read_scores(source)
    x = np.random.default_rng(0).random((4, 6))
    for test in ("bootstrap", "randomisation"):
        with pytest.raises(InputError, match="B must be a positive integer; got 0"):
            me.compare({"AP": x}, test=test, n_resamples=0)


def test_a_tidy_frame_indexed_by_its_columns_is_read_as_the_same_table():
    from meta_eval.inputs.score_tables import read_scores

    col = me.demo_collection()
    tidy = me.evaluate(col, ["AP", "nDCG@10"])
    tidy = tidy[~tidy["summary"]].drop(columns="summary")
    for index in (["run", "topic", "measure"], ["run"]):
        table = read_scores(tidy.set_index(index))
        for name in ("AP", "nDCG@10"):
            np.testing.assert_array_equal(table.scores[name], me.score(col, name))
