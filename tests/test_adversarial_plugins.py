"""Adversarial cases of the plug-in class (issue 21): each asserts the clear error or the correct result, and that
nothing else changed (the built-in names, the values of built-in measures scored in the same pass, no output).

The mechanism under test is one loader (:mod:`meta_eval.measures.plugins`) and one resolver
(:mod:`meta_eval.measures.resolver`): a namespace of plug-ins apart from the built-in names, read-only inputs, and
one check of every output.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from typer.testing import CliRunner

import meta_eval as me
from meta_eval.measures import families, get_measure, resolve
from meta_eval.measures.plugins import PluginError
from meta_eval.measures.registry import is_builtin


def plugin(tmp_path, body: str, name: str = "plug.py") -> str:
    """Write a plug-in file; return its path as text."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("import numpy as np\nimport meta_eval as me\n\n" + textwrap.dedent(body))
    return str(path)


def small_collection():
    """Two runs, two topics; only run b on topic q2 retrieves 5 documents (a list a plug-in can pick out)."""
    return me.load_collection(
        {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d1": 1, "d4": 2}},
        {"a": {"q1": {"d1": 1.5, "d2": 0.3}, "q2": {"d1": 3, "d4": 2, "d5": 1, "d6": 0.5}},
         "b": {"q1": {"d1": 1, "d2": 0.5, "d3": 0.2}, "q2": {"d1": 1, "d2": 0.9, "d3": 0.8, "d4": 0.7, "d5": 0.6}}})


def builtin_state():
    """The built-in namespace: every family's name, and whether its function is meta-eval's."""
    return sorted((f.name, is_builtin(getattr(f.func, "__wrapped__", f.func))) for f in families())


# ------------------------------------------------------------------------------------------------ namespace


@pytest.mark.parametrize("name", ["gap", "GAP", "ap", "err", "Gap", "ndcg", "bpref", "map", "MAP", "P_5", "p_5",
                                  "ndcg_cut", "ndcg_cut_10", "recip_rank", "Rprec", "vG", "all_trec", "rbp_resid"])
def test_a_plugin_named_like_a_builtin_is_refused(tmp_path, name):
    before = builtin_state()
    path = plugin(tmp_path, f"def {name}(r):\n    return np.zeros(r.shape)\n")
    with pytest.raises(me.InputError, match=f"named '{name}', which is .*never replaces or shadows"):
        resolve([f"{path}:{name}"])
    assert builtin_state() == before
    assert is_builtin(get_measure("GAP").family.func)


def test_plugin_and_builtin_gap_never_give_two_identical_columns(tmp_path):
    """The issue's case: -m my.py:gap -m GAP gave two identical columns; now a clear error and no output."""
    from meta_eval.cli import app

    path = plugin(tmp_path, "def gap(r):\n    return np.zeros(r.shape)\n", "my.py")
    out = tmp_path / "out.csv"
    result = CliRunner().invoke(app, ["evaluate", "-m", f"{path}:gap", "-m", "GAP", "-o", str(out)])
    assert result.exit_code == 2 and "never replaces or shadows" in result.output
    assert "Traceback" not in result.output and not out.exists()


def test_registrations_of_a_plugin_stay_in_its_namespace(tmp_path):
    before = builtin_state()
    path = plugin(tmp_path, """
        @me.register("MyHits", cutoff=me.Param("k", 10, int, "cutoff", within="[1, inf)"))
        def my_hits(r, k):
            return r.count_at(r.cum_relevant(), k)

        @me.register("GAP")
        def fake_gap(r):
            return np.zeros(r.shape)
        """)
    col = me.demo_collection()
    (hits,) = resolve(f"{path}:MyHits@5")
    assert hits.output_name == "MyHits@5" and hits.family.source.endswith("plug.py")
    np.testing.assert_allclose(me.score(col, hits), me.score(col, "P@5") * 5)
    with pytest.raises(me.InputError, match="registers no|never replaces"):
        resolve(f"{path}:*")  # the module registers GAP: refused when used
    with pytest.raises(me.InputError, match="never replaces"):
        resolve(f"{path}:GAP")
    with pytest.raises(me.InputError, match="did you mean .*plug.py:MyHits"):
        get_measure("MyHits@5")  # never joined the built-in names
    assert builtin_state() == before
    assert is_builtin(get_measure("GAP").family.func)


def test_every_registered_metric_of_a_module_and_parameters_of_a_plugin(tmp_path):
    path = plugin(tmp_path, """
        @me.register("Hits2", cutoff=me.Param("k", 10, int, "cutoff", within="[1, inf)"))
        def hits(r, k):
            return r.count_at(r.cum_relevant(), k)

        @me.register("First2")
        def first(r):
            return (r.grades[..., 0] > 0).astype(float)
        """)
    assert [m.output_name for m in resolve(f"{path}:*")] == ["Hits2@10", "First2"]  # declared defaults
    with pytest.raises(me.InputError, match="out of range"):
        resolve(f"{path}:Hits2@0")  # the declared domain holds for plug-ins too
    with pytest.raises(me.InputError, match="has no parameter"):
        resolve(f"{path}:Hits2(p=1)")
    plain = plugin(tmp_path, "def f(r):\n    return np.zeros(r.shape)\n", "plain.py")
    with pytest.raises(me.InputError, match="plain function, which takes no parameters"):
        resolve(f"{plain}:f@5")


@pytest.mark.parametrize("other", ["score", "Score", "SCORE"])
def test_two_plugins_of_one_name_from_two_files_are_an_error(tmp_path, other):
    a = plugin(tmp_path / "a", "def score(r):\n    return np.zeros(r.shape)\n")
    b = plugin(tmp_path / "b", f"def {other}(r):\n    return np.ones(r.shape)\n")
    with pytest.raises(me.InputError, match="two different measures are named"):
        resolve([f"{a}:score", f"{b}:{other}"])


def test_a_repeated_plugin_is_one_measure(tmp_path, monkeypatch):
    path = plugin(tmp_path, "def score(r):\n    return np.zeros(r.shape)\n")
    monkeypatch.chdir(tmp_path)
    found = resolve([f"{path}:score", "plug.py:score", f"{tmp_path}/./plug.py:score", "AP", "ap"])
    assert [m.output_name for m in found] == ["score", "AP"]


def test_two_files_of_one_stem_in_two_folders_stay_apart(tmp_path):
    """Both load as modules of their own (a name made from the stem alone made the second replace the first)."""
    a = plugin(tmp_path / "a", "def first(r):\n    return np.full(r.shape, 1.0)\n", "metrics.py")
    b = plugin(tmp_path / "b", "def second(r):\n    return np.full(r.shape, 2.0)\n", "metrics.py")
    col = small_collection()
    values = me.score(col, [f"{a}:first", f"{b}:second"])
    assert (values["first"] == 1).all() and (values["second"] == 2).all()
    assert (me.score(col, f"{a}:first") == 1).all()


def test_a_bare_name_never_imports_a_module(tmp_path, monkeypatch):
    marker = tmp_path / "imported"
    (tmp_path / "sidefx.py").write_text(f"open({str(marker)!r}, 'w').close()\ndef f(r):\n    return r.n_ret * 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for spec in ("sidefx", "this", "os"):
        with pytest.raises(me.InputError, match="unknown measure"):
            resolve(spec)
    with pytest.raises(me.InputError, match="names no metric by itself"):
        resolve("sidefx.py")  # a file name alone loads nothing
    assert not marker.exists() and "sidefx" not in sys.modules
    (measure,) = resolve("sidefx:f")  # only module:function loads code
    assert marker.exists() and measure.family.source == "sidefx"


def test_a_bare_file_is_refused_with_the_spellings_that_name_its_metrics(tmp_path):
    path = plugin(tmp_path, "@me.register('Old1')\ndef old(r):\n    return np.zeros(r.shape)\n")
    with pytest.raises(me.InputError, match=r"plug.py:FUNCTION .*plug.py:\*"):
        resolve(path)
    assert [m.output_name for m in resolve(f"{path}:*")] == ["Old1"]


def test_in_process_registration_never_replaces_a_builtin():
    before = builtin_state()
    for name in ("AP", "ap", "map", "P_10", "ndcg_cut_5"):
        with pytest.raises(me.InputError, match="already .*never replaced"):
            me.register(name)(lambda r: np.zeros(r.shape))
    with pytest.raises(me.InputError, match="never replaces"):
        me.metric_from_callable(lambda r: np.zeros(r.shape), name="nDCG")
    assert builtin_state() == before


def test_broken_plugins_fail_with_file_and_line(tmp_path):
    syntax = plugin(tmp_path, "def f(r)\n    return 1\n", "syntax.py")
    with pytest.raises(me.InputError, match=r"syntax.py:4: cannot import metric plug-in: SyntaxError"):
        resolve(f"{syntax}:f")
    exits = plugin(tmp_path, "raise SystemExit(3)\n", "exits.py")
    with pytest.raises(me.InputError, match=r"exits.py:4: cannot import metric plug-in: SystemExit"):
        resolve(f"{exits}:f")
    folder = tmp_path / "folder.py"
    folder.mkdir()
    with pytest.raises(me.InputError, match="not a regular file"):
        resolve(f"{folder}:f")
    assert not [name for name in sys.modules if name.startswith(("meta_eval_plugin_syntax", "meta_eval_plugin_exits"))]
    not_callable = plugin(tmp_path, "VALUE = 3\n", "value.py")
    with pytest.raises(me.InputError, match="no metric or function named 'VALUE'"):
        resolve(f"{not_callable}:VALUE")


def test_a_plugin_imports_its_neighbours_and_never_anothers(tmp_path):
    """Two plug-in folders with a helpers.py each: the second plug-in would run the first one's helpers (a module
    of that name is imported already) -- a clear error, not another plug-in's numbers."""
    helper = f"helper_{abs(hash(str(tmp_path)))}"
    for folder, weight in (("one", 0.25), ("two", 0.5)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"{helper}.py").write_text(f"WEIGHT = {weight}\n")
        plugin(tmp_path / folder, f"from {helper} import WEIGHT\n\ndef w_{folder}(r):\n"
                                  "    return np.full(r.shape, WEIGHT)\n")
    assert (me.score(small_collection(), f"{tmp_path}/one/plug.py:w_one") == 0.25).all()
    with pytest.raises(me.InputError, match=f"imports '{helper}', which is .*two.*imported before from .*one"):
        resolve(f"{tmp_path}/two/plug.py:w_two")


# ------------------------------------------------------------------------------------------------ read-only


@pytest.mark.parametrize("edit", ["r.grades[...] = 0", "r.counts[..., 1] = 0", "r.n_ret[...] = 0",
                                  "r.grades.flags.writeable = True", "np.copyto(r.grades, 0)",
                                  "r.grades.sort(axis=-1)", "r.grades += 1"])
def test_an_in_place_edit_is_a_clear_error_naming_the_plugin(tmp_path, edit):
    path = plugin(tmp_path, f"def edits(r):\n    {edit}\n    return np.zeros(r.shape)\n")
    with pytest.raises(PluginError, match=r"plug.py:edits: raised ValueError.*read-only arrays.*at .*plug.py:5"):
        me.score(small_collection(), f"{path}:edits")


@pytest.mark.parametrize("edit", ["grades[0] = 2", "counts[1] = 0", "grades.sort()"])
def test_a_per_list_edit_is_a_clear_error_with_run_and_topic(tmp_path, edit):
    path = plugin(tmp_path, f"@me.per_list\ndef edits(grades, counts):\n    {edit}\n    return 0.0\n")
    with pytest.raises(PluginError, match=r"edits: raised ValueError.*read-only.*\(run a, topic q1\)"):
        me.score(small_collection(), f"{path}:edits")


SNEAKY = """
def sneaky(r):
    '''Tries every way around the read-only arrays, swallowing the errors, and returns a value.'''
    for attempt in (lambda: r.grades.__setitem__(Ellipsis, 0), lambda: setattr(r.grades.flags, "writeable", True)):
        try:
            attempt()
        except ValueError:
            pass
    base = r.grades.base
    base.flags.writeable = True   # its own copy: allowed, and harmless
    base[...] = 0
    r.relevant()[...] = False     # a derived array of its own cache
    r._cache[("rel", 1)] = np.zeros(r.grades.shape, bool)
    r.counts.base.flags.writeable = True
    r.counts.base[...] = 0
    return np.zeros(r.shape)
"""


@pytest.mark.parametrize("first", [True, False])
def test_builtins_scored_in_the_same_pass_are_never_affected(tmp_path, first):
    """bpref before and after a plug-in that edits what it can, in one evaluate call, in either order."""
    path = plugin(tmp_path, SNEAKY)
    col = me.demo_collection()
    alone = me.evaluate(col, ["bpref", "AP", "nDCG@10"])
    names = [f"{path}:sneaky", "bpref", "AP", "nDCG@10"] if first else ["bpref", f"{path}:sneaky", "AP", "nDCG@10"]
    both = me.evaluate(col, names)
    for name in ("bpref", "AP", "nDCG@10"):
        np.testing.assert_array_equal(both[both.measure == name].value.to_numpy(),
                                      alone[alone.measure == name].value.to_numpy())
    assert (both[both.measure == "sneaky"].value == 0).all()
    np.testing.assert_array_equal(me.score(col, "bpref"), me.score(me.demo_collection(), "bpref"))


# ------------------------------------------------------------------------------------------------ outputs

BAD_OUTPUTS = {
    "raise RuntimeError('boom')": r"raised RuntimeError: boom at .*plug.py",
    "raise SystemExit(0)": r"raised SystemExit",
    "return None": r"returned None",
    "return 'text'": r"returned the text 'text'",
    "return np.full(r.shape, 'x')": r"returned text",
    "return np.zeros(r.shape[0])": r"returned shape \(2,\).*r.shape = \(2, 1\)",
    "return np.zeros(r.shape + (1,))": r"returned shape \(2, 1, 1\)",
    "return 0.5": r"returned shape \(\) \(one number for every list\?\)",
    "return np.zeros(r.shape) + 1j": r"returned complex numbers",
    "return (x for x in range(4))": r"returned a generator",
    "return [[1.0, 2.0], [3.0]]": r"not an array of numbers|Python objects",
    "return np.array([[None, 1.0], [2.0, 3.0]])": r"Python objects",
    "return {'a': 1}": r"Python objects|not an array",
    "return np.ma.masked_array(np.zeros(r.shape), mask=True)": r"masked array",
    "return np.where(r.n_ret == 5, np.inf, 0.0)": r"returned inf \(infinite\) \(run b, topic q2\)",
    "return np.where(r.n_ret == 5, -np.inf, 0.0)": r"returned -inf \(infinite\) \(run b, topic q2\)",
    "return np.where(r.n_ret == 5, np.nan, 0.0)": r"returned NaN, and does not declare.*\(run b, topic q2\)",
    "return np.full(r.shape, np.longdouble(1e300) ** 15)": r"infinite",  # finite as long double, not as float
    "return np.array(r.shape, dtype='datetime64[D]')": r"values of type|shape",
}


@pytest.mark.parametrize("line", list(BAD_OUTPUTS))
def test_a_bad_output_is_a_clear_error_naming_the_plugin(tmp_path, line):
    path = plugin(tmp_path, f"def bad(r):\n    {line}\n")
    with pytest.raises(PluginError, match=r"metric plug-in .*plug.py:bad: .*(?:" + BAD_OUTPUTS[line] + ")") as info:
        me.score(small_collection(), f"{path}:bad")
    assert "Traceback" not in str(info.value)


GOOD_OUTPUTS = {
    "return (r.n_ret > 3)": [[0, 1], [0, 1]],  # booleans are 0/1
    "return r.n_ret": [[2, 4], [3, 5]],  # integers
    "return r.n_ret.astype(np.float32) / 2": [[1, 2], [1.5, 2.5]],
    "return (r.n_ret * 1.0).tolist()": [[2, 4], [3, 5]],  # a nested list of the leading shape
}


@pytest.mark.parametrize("line", list(GOOD_OUTPUTS))
def test_outputs_that_are_numbers_of_the_right_shape_are_accepted(tmp_path, line):
    path = plugin(tmp_path, f"def good(r):\n    {line}\n")
    np.testing.assert_array_equal(me.score(small_collection(), f"{path}:good"), GOOD_OUTPUTS[line])


PER_LIST_BAD = {
    "return None": "returned None",
    "return 'x'": "returned the text 'x'",
    "return [1.0]": "returned a list",
    "return np.array([1.0])": "returned a ndarray",
    "return 1 + 2j": "complex number",
    "return 10 ** 400": "number too large",
    "raise KeyError('k')": "raised KeyError: 'k'",
}


def test_a_per_list_value_may_be_any_real_number(tmp_path):
    path = plugin(tmp_path, "from fractions import Fraction\n\n@me.per_list\ndef pl(grades, counts):\n"
                            "    return [Fraction(1, 3), np.float32(0.5), True, np.int8(2)][len(grades) % 4]\n")
    # lengths [[2, 4], [3, 5]]: True, Fraction(1, 3); np.int8(2), np.float32(0.5)
    np.testing.assert_allclose(me.score(small_collection(), f"{path}:pl"), [[1.0, 1 / 3], [2.0, 0.5]])


@pytest.mark.parametrize("line", list(PER_LIST_BAD))
def test_a_per_list_bad_value_names_run_and_topic(tmp_path, line):
    path = plugin(tmp_path, f"@me.per_list\ndef pl(grades, counts):\n    if len(grades) == 5:\n        {line}\n"
                            "    return 1.0\n")
    with pytest.raises(PluginError, match=rf"plug.py:pl: .*{PER_LIST_BAD[line]}.*\(run b, topic q2\)"):
        me.score(small_collection(), f"{path}:pl")


def test_declared_undefined_values_follow_the_documented_nan_policy(tmp_path):
    """A plug-in that declares when it is undefined may return NaN there: like RHL, the list has no per-topic row
    and the mean is over the lists where it is defined. inf stays an error."""
    path = plugin(tmp_path, """
        @me.register("Ratio", undefined="no relevant document was retrieved")
        def ratio(r):
            found = r.num_rel_ret().astype(float)
            return np.where(found > 0, found / r.n_ret, np.nan)
        """)
    col = small_collection()
    table = me.evaluate(col, [f"{path}:Ratio"])
    values = me.score(col, f"{path}:Ratio")
    rows = table[~table.summary]
    assert len(rows) == np.isfinite(values).sum()
    summary = table[table.summary].set_index("run").value
    for s, run in enumerate(col.systems):
        assert summary[run] == pytest.approx(np.nanmean(values[s]))
    infinite = plugin(tmp_path, "@me.register('Inf', undefined='never')\ndef inf(r):\n    return r.n_ret / 0.0\n",
                      "inf.py")
    with pytest.raises(PluginError, match="infinite"):
        me.score(col, f"{infinite}:Inf")


def test_python_api_callables_keep_the_contract():
    col = small_collection()
    bad = me.metric_from_callable(lambda r: np.full(r.shape, np.nan), name="nan_metric")
    with pytest.raises(PluginError, match=r"nan_metric: returned NaN.*\(run a, topic q1\)"):
        me.score(col, bad)

    @me.per_list
    def first(grades, counts):
        grades[0] = 1
        return 0.0

    with pytest.raises(PluginError, match="read-only"):
        me.score(col, me.metric_from_callable(first))


# ------------------------------------------------------------------------------------------------ entry points


def test_study_never_replaces_the_reference_gap(tmp_path):
    from meta_eval.analyses import builtin_modules
    from meta_eval.orchestration.study import StudyOptions, run_study

    bad = plugin(tmp_path, "def gap(r):\n    return np.zeros(r.shape)\n", "bad.py")
    out = tmp_path / "study"
    with pytest.raises(me.InputError, match="never replaces"):
        run_study(me.demo_collection(), out, StudyOptions(metrics=[f"{bad}:gap"], skip=[n for n in builtin_modules() if n != "scores"]))
    assert not out.exists()
    good = plugin(tmp_path, "def my_gap(r):\n    return np.zeros(r.shape)\n", "good.py")
    result = run_study(me.demo_collection(), out, StudyOptions(metrics=[f"{good}:my_gap"], skip=[n for n in builtin_modules() if n != "scores"]))
    assert not result.errors and {"my_gap", "GAP", "nDCG"} <= set(result.measures)
    import pandas as pd

    scores = pd.read_csv(out / "scores.csv")
    gap = scores[scores.metric == "GAP"] if "metric" in scores else scores[scores.measure == "GAP"]
    assert len(gap) and not np.allclose(gap.select_dtypes("number").to_numpy(), 0)


def test_informativeness_names_run_and_topic_before_solving(tmp_path, monkeypatch):
    from meta_eval.statistics import maxent as mem
    from meta_eval.statistics.maxent import solver

    path = plugin(tmp_path, "def nan_on_long(r):\n    return np.where(r.n_ret > 30, np.nan, 0.5)\n")
    lists = mem.lists_from_collection(me.demo_collection())
    monkeypatch.setattr(solver, "solve_mems", lambda *a, **k: pytest.fail("solved before the check"))
    with pytest.raises(PluginError, match=r"nan_on_long: returned NaN.*\(run sys\d+, topic \d+\)"):
        mem.informativeness(lists, [f"{path}:nan_on_long", "AP"])


def test_a_plugin_failing_in_a_worker_process_is_the_same_clear_error(tmp_path):
    from meta_eval.statistics import maxent as mem
    from meta_eval.statistics.maxent.solver import solve_mems

    path = plugin(tmp_path, "def boom(r):\n    raise ZeroDivisionError('in a worker')\n")
    lists = mem.lists_from_collection(me.demo_collection())
    with pytest.raises(PluginError, match="plug.py:boom: raised ZeroDivisionError: in a worker"):
        solve_mems(lists.batch.subset(np.arange(80)), [f"{path}:boom"], jobs=2, chunk_size=16)


def test_ltr_objective_plugin_is_held_to_the_contract(tmp_path):
    from meta_eval.statistics.learning_to_rank.swap_deltas import swap_deltas

    path = plugin(tmp_path, "@me.per_list\ndef bad(grades, counts):\n    return 'x' if len(grades) > 2 else 1.0\n")
    grades = np.array([[2, 0, 1, 0], [1, 1, 0, 0]])
    counts = np.array([[5, 2, 1], [5, 2, 1]])
    with pytest.raises(PluginError, match="plug.py:bad: returned the text 'x'"):
        swap_deltas(f"{path}:bad", grades, counts)


def test_workers_rebuild_a_plugin_from_its_specification(tmp_path):
    path = plugin(tmp_path, "def half(r):\n    return np.full(r.shape, 0.5)\n")
    (measure,) = resolve(f"{path}:half")
    assert measure.spec == f"{tmp_path.resolve()}/plug.py:half"
    again = pickle.loads(pickle.dumps(measure))
    assert again.spec == measure.spec and (me.score(small_collection(), again) == 0.5).all()
    error = pickle.loads(pickle.dumps(PluginError("plug.py:half", "returned None", (1, 0), "run b")))
    assert str(error) == "metric plug-in plug.py:half: returned None (run b)" and error.index == (1, 0)
    assert pickle.loads(pickle.dumps(get_measure("map"))).output_name == "map"


def test_a_helper_module_keeps_its_registrations_for_later(tmp_path, monkeypatch):
    """A helper that registers metrics, imported by a plug-in file first, still offers them as helper:*."""
    helper = f"reg_helper_{abs(hash(str(tmp_path)))}"
    (tmp_path / f"{helper}.py").write_text("import numpy as np\nimport meta_eval as me\n\n@me.register('HelperOne')\n"
                                           "def one(r):\n    return np.ones(r.shape)\n")
    path = plugin(tmp_path, f"import {helper}\n\ndef user(r):\n    return np.zeros(r.shape)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert [m.output_name for m in resolve([f"{path}:user", f"{helper}:*"])] == ["user", "HelperOne"]
    with pytest.raises(me.InputError, match="unknown measure"):
        get_measure("HelperOne")


def test_a_registration_removed_from_an_edited_plugin_is_gone(tmp_path):
    path = plugin(tmp_path, "@me.register('KeepA')\ndef a(r):\n    return np.zeros(r.shape)\n\n"
                            "@me.register('DropB')\ndef b(r):\n    return np.zeros(r.shape)\n")
    assert [m.output_name for m in resolve(f"{path}:*")] == ["KeepA", "DropB"]
    plugin(tmp_path, "@me.register('KeepA')\ndef a(r):\n    return np.ones(r.shape)\n")
    assert [m.output_name for m in resolve(f"{path}:*")] == ["KeepA"]
    assert (me.score(small_collection(), f"{path}:KeepA") == 1).all()  # the edited code runs
    with pytest.raises(me.InputError, match="registers 'twice' twice"):  # names are case-insensitive
        resolve(plugin(tmp_path, "@me.register('Twice')\ndef a(r):\n    return r.n_ret\n\n"
                                 "@me.register('twice')\ndef b(r):\n    return r.n_ret\n", "twice.py") + ":*")


def test_a_study_with_a_plugin_returning_nan_writes_nothing(tmp_path):
    from meta_eval.analyses import builtin_modules
    from meta_eval.orchestration.study import StudyOptions, run_study

    path = plugin(tmp_path, "def holes(r):\n    return np.where(r.n_ret > 0, np.nan, 0.0)\n")
    out = tmp_path / "study"
    with pytest.raises(PluginError, match=r"holes: returned NaN.*\(run sys\d+, topic \d+\)"):
        run_study(me.demo_collection(), out, StudyOptions(metrics=[f"{path}:holes"], skip=[n for n in builtin_modules() if n != "scores"]))
    assert not out.exists()


def test_what_a_plugin_prints_goes_to_stderr_not_into_the_results(tmp_path):
    """A plug-in's print() would otherwise end up inside results written to standard output (`-o -`)."""
    (tmp_path / "chatty.py").write_text("import numpy as np\ndef chatty(r):\n    print('debug: scoring', r.shape)\n"
                                        "    return np.zeros(r.shape)\n")
    cli = [sys.executable, "-c", "from meta_eval.cli import run; run()"]
    result = subprocess.run([*cli, "evaluate", "-m", f"{tmp_path / 'chatty.py'}:chatty", "-o", "-", "-f", "csv"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    assert result.stdout.splitlines()[0] == "run,topic,measure,value,summary" and "debug" not in result.stdout
    assert "debug: scoring" in result.stderr


def test_a_thread_a_plug_in_leaves_running_does_not_hold_the_command(tmp_path):
    """A plug-in that starts a (non-daemon) thread that never ends: the command printed its results and then waited
    for the thread forever (a Ctrl-C there ended with status 0 and a traceback)."""
    plugin = tmp_path / "threads.py"
    plugin.write_text("import threading, time\nimport numpy as np\n\n\ndef spawn(r):\n"
                      "    threading.Thread(target=time.sleep, args=(10**6,), name='endless').start()\n"
                      "    return np.zeros(r.shape)\n")
    result = subprocess.run([sys.executable, "-c", "from meta_eval.cli import run; run()", "evaluate", "-m", "AP",
                             "-m", f"{plugin}:spawn", "-f", "csv", "--no-progress"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "thread(s) a plug-in started still run (endless)" in result.stderr
    assert len(result.stdout.splitlines()) == 1 + 2 * 32 and result.stdout.endswith("sys32,all,spawn,0.0,True\n")
