"""Per-list plug-ins (``@me.per_list``) evaluated fast and exactly: compiled by numba when that pays and its values
are Python's to the last bit, in Python otherwise (issue 35). The reference everywhere is the plain loop a per-list
function always meant: ``func(g[:n][g[:n] != PAD], counts)`` for every padded row ``g`` of length ``n``."""

from __future__ import annotations

import contextlib
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import meta_eval as me
from meta_eval.measures import plugins
from meta_eval.measures.plugins import PluginError
from meta_eval.model.rankings import PAD

P = 0.8


def _grbp(grades, counts):
    """Graded RBP down the list, as a loop (numba compiles it; its values are Python's to the last bit)."""
    top = max(len(counts) - 1, 1)
    total, weight = 0.0, 1 - P
    for g in grades:
        if g > 0:
            total += weight * g / top
        weight *= P
    return total


def _first_top(grades, counts):
    """1 / rank of the first document of the top grade, with numpy on the one list; an int, a bool or a float."""
    hits = np.flatnonzero(grades == len(counts) - 1)
    if len(grades) == 0:
        return True
    return 1.0 / (hits[0] + 1) if len(hits) else 0


def _numpy_sum(grades, counts):
    """Discounted gain summed by numpy (pairwise): numba sums in order, so its last digits can differ."""
    return float(np.sum(np.maximum(grades, 0) / np.log2(np.arange(len(grades)) + 2.0))) + counts[0] * 1e-3


def _wraps_int8(grades, counts):
    """int8 arithmetic wraps in numpy (2 * 100 = -56) and widens in numba."""
    return float(np.sum(grades * 100))


FUNCTIONS = [_grbp, _first_top, _numpy_sum, _wraps_int8]


def plain_loop(func, r: me.Rankings) -> np.ndarray:
    """The reference: one call a list, on the list without padding, as the documented contract says."""
    grades = np.asarray(r.grades).reshape(-1, r.depth)
    n_ret = np.broadcast_to(r.n_ret, r.shape).reshape(-1)
    counts = np.broadcast_to(r.counts, r.shape + (r.counts.shape[-1],)).reshape(-1, r.counts.shape[-1])
    return np.array([float(func(g[:n][g[:n] != PAD], c)) for g, n, c in zip(grades, n_ret, counts)]).reshape(r.shape)


@contextlib.contextmanager
def mode(compiled: bool):
    """Compile from the first list (``compiled``) or never; restores the thresholds."""
    saved = plugins.COMPILE_AFTER_S, plugins.PROBE_LISTS
    plugins.COMPILE_AFTER_S, plugins.PROBE_LISTS = (0.0, 0) if compiled else (float("inf"), 0)
    try:
        yield
    finally:
        plugins.COMPILE_AFTER_S, plugins.PROBE_LISTS = saved


@contextlib.contextmanager
def warning_yardstick(factor_always_large: bool = True):
    """The warning's yardstick (a vectorised metric's time a list) fixed, so that whether it prints is not a
    matter of timing: 0 s (every Python call is slower) or a day (none is)."""
    saved = plugins._vectorised_seconds
    plugins._vectorised_seconds = lambda grades: 0.0 if factor_always_large else 86400.0
    try:
        yield
    finally:
        plugins._vectorised_seconds = saved


COMPILED = {f.__name__: me.per_list(f) for f in FUNCTIONS}  # one evaluator each, compiled once for all examples
PYTHON = {f.__name__: me.per_list(f) for f in FUNCTIONS}


@st.composite
def rankings(draw) -> me.Rankings:
    """Random rankings: 0-2 leading axes, PAD inside and after the lists, lengths past the depth or negative
    (Python's slice), grades as int8, int16 or int64, counts per list or one row for all."""
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=2)))
    depth = draw(st.integers(1, 12))
    top = draw(st.integers(1, 4))
    n_lists = int(np.prod(shape, dtype=np.int64))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    dtype = draw(st.sampled_from([np.int8, np.int16, np.int64]))
    grades = rng.integers(-3, top + 1, size=shape + (depth,)).astype(dtype)
    if draw(st.booleans()):  # meta-eval's own layout: PAD exactly after each list
        n_ret = rng.integers(0, depth + 1, size=shape)
        grades = np.where(np.arange(depth) < n_ret[..., None], np.where(grades == PAD, 0, grades), PAD).astype(dtype)
    else:
        n_ret = rng.integers(-2, depth + 3, size=shape)
    counts = rng.integers(0, 6, size=(top + 1,) if draw(st.booleans()) else shape + (top + 1,))
    assert n_lists == grades.size // depth
    return me.Rankings(grades, n_ret, counts)


@given(rankings())
def test_values_are_the_plain_loop_s_compiled_or_not(r):
    for name, func in ((f.__name__, f) for f in FUNCTIONS):
        expected = plain_loop(func, r)
        with mode(compiled=True):
            compiled = COMPILED[name](r)
        with mode(compiled=False):
            python = PYTHON[name](r)
        assert compiled.shape == python.shape == r.shape
        np.testing.assert_array_equal(compiled, expected, err_msg=name)  # exact: to the last bit
        np.testing.assert_array_equal(python, expected, err_msg=name)


def long_lists(n_lists: int = 3) -> me.Rankings:
    """Lists of 300 random grades 0-2: long enough for numpy's pairwise sum to differ from numba's in-order one."""
    grades = np.random.default_rng(7).integers(0, 3, size=(n_lists, 300))
    r = me.Rankings.from_lists(grades, counts=[[300, 100, 100]] * n_lists)
    in_order = sum(float(g) / np.log2(i + 2.0) for i, g in enumerate(grades[-1]))
    assert np.sum(grades[-1] / np.log2(np.arange(300) + 2.0)) != in_order  # what the fallback is about
    return r


def test_compilable_functions_stay_compiled_and_the_others_fall_back():
    """After the property test's examples: the loop and the numpy function of integers ran compiled all along;
    the pairwise sum and the int8 arithmetic are found to differ and go back to Python."""
    r = long_lists()
    with mode(compiled=True):
        for name in COMPILED:
            np.testing.assert_array_equal(COMPILED[name](r), plain_loop(COMPILED[name].per_list, r))
    for name in ("_grbp", "_first_top"):
        assert COMPILED[name].evaluator.compiled is not None and not COMPILED[name].evaluator.python_only, name
    for name in ("_numpy_sum", "_wraps_int8"):
        assert "differ" in COMPILED[name].evaluator.python_only, name


def test_a_collection_is_scored_by_the_compiled_loop_with_few_python_calls():
    col = me.demo_collection()
    grbp = me.per_list(_grbp)
    with mode(compiled=True):
        values = me.score(col, me.metric_from_callable(grbp, name="grbp_compiled"))
    evaluator = grbp.evaluator
    assert evaluator.compiled is not None
    assert evaluator.python_lists <= plugins.VERIFY_FIRST + 1 < values.size  # only the checked lists in Python
    reference = me.per_list(_grbp)
    with mode(compiled=False):
        np.testing.assert_array_equal(values, me.score(col, me.metric_from_callable(reference, name="grbp_python")))


def _discount(rank):
    return 1.0 / np.log2(rank + 1.0)


def _gain(grade, top):
    return (2.0 ** grade - 1) / (2.0 ** top - 1) if grade > 0 else 0.0


def _dcg_with_helpers(grades, counts):
    """A metric split into module-level helpers, with a comprehension: compiled as a whole."""
    return sum([_gain(g, len(counts) - 1) * _discount(i + 1) for i, g in enumerate(grades)])


def test_a_function_calling_its_module_s_helpers_is_compiled_with_them():
    measure = me.per_list(_dcg_with_helpers)
    r = long_lists(5)
    with mode(compiled=True):
        values = measure(r)
    assert measure.evaluator.compiled is not None and not measure.evaluator.python_only
    np.testing.assert_array_equal(values, plain_loop(_dcg_with_helpers, r))
    assert _dcg_with_helpers.__globals__["_discount"] is _discount  # the module's own functions are untouched


def test_compiling_waits_until_python_has_cost_what_compiling_does(monkeypatch):
    """By default a function scored on a few lists never compiles (nor imports numba for it); one whose Python
    calls add up to COMPILE_AFTER_S is compiled."""
    monkeypatch.setattr(plugins, "PROBE_LISTS", 0)
    grbp = me.per_list(_grbp)
    r = me.Rankings.from_lists([[2, 0, 1]] * 100, counts=[[3, 2, 2]] * 100)
    grbp(r)
    assert grbp.evaluator.compiled is None and grbp.evaluator.python_lists == 100
    grbp.evaluator.python_seconds = plugins.COMPILE_AFTER_S  # as if the calls so far had cost that much
    grbp(r)
    assert grbp.evaluator.compiled is not None
    assert grbp.evaluator.python_lists == 100 + plugins.VERIFY_FIRST  # the second call: only the checked lists


# ------------------------------------------------------------------------------------------------ errors


def small_collection():
    """Two runs, two topics; only run b on topic q2 retrieves 5 documents."""
    return me.load_collection(
        {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d1": 1, "d4": 2}},
        {"a": {"q1": {"d1": 1.5, "d2": 0.3}, "q2": {"d1": 3, "d4": 2, "d5": 1, "d6": 0.5}},
         "b": {"q1": {"d1": 1, "d2": 0.5, "d3": 0.2}, "q2": {"d1": 1, "d2": 0.9, "d3": 0.8, "d4": 0.7, "d5": 0.6}}})


def _raises_on_five(grades, counts):
    if len(grades) == 5:
        raise ValueError("five documents")
    return 1.0


def _index_past_the_list(grades, counts):
    return float(grades[3])  # lists of 2 and 3 documents have no rank 4


def _infinite_on_five(grades, counts):
    return np.inf if len(grades) == 5 else 0.5


def _zero_division_on_five(grades, counts):
    return 1.0 / (len(grades) - 5)


def _text_on_five(grades, counts):
    return "five" if len(grades) == 5 else 1.0


def _edits(grades, counts):
    grades[0] = 2
    return 0.0


ERRORS = {
    _raises_on_five: r"raised ValueError: five documents at .*test_plugins_per_list.py:\d+ \(run b, topic q2\)",
    _index_past_the_list: r"raised IndexError.* \(run a, topic q1\)",
    _infinite_on_five: r"returned inf \(infinite\) \(run b, topic q2\)",
    _zero_division_on_five: r"raised ZeroDivisionError.* \(run b, topic q2\)",
    _text_on_five: r"returned the text 'five'.* \(run b, topic q2\)",
    _edits: r"raised ValueError.*read-only.* \(run a, topic q1\)",
}


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
@pytest.mark.parametrize("func", list(ERRORS), ids=lambda f: f.__name__)
def test_errors_name_the_list_compiled_or_not(func, compiled):
    measure = me.metric_from_callable(me.per_list(func))
    with mode(compiled), pytest.raises(PluginError, match=ERRORS[func]) as info:
        me.score(small_collection(), measure)
    assert "Traceback" not in str(info.value)


def test_the_compiled_loop_fails_where_python_would_never_silently():
    """Bounds checked and Python's error model: an index past a list and a division by zero raise (the caller
    then replays the lists in Python); an edit of the read-only grades and mixed return types do not compile."""
    from meta_eval.measures.per_list_compiler import CompiledLoop, NotCompilable

    grades = np.array([[1, 2, 0, 1, 2, PAD]], dtype=np.int8)
    grades.flags.writeable = False
    counts = np.array([[1, 1, 1]])
    counts.flags.writeable = False
    with pytest.raises(IndexError):
        CompiledLoop(_index_past_the_list)(grades, np.array([2]), counts)  # rank 4 of a list of 2: in the row
    with pytest.raises(ZeroDivisionError):
        CompiledLoop(_zero_division_on_five)(grades, np.array([5]), counts)
    for func in (_edits, _text_on_five):
        with pytest.raises(NotCompilable):
            CompiledLoop(func)(grades, np.array([5]), counts)
    assert CompiledLoop(_grbp)(grades, np.array([5]), counts)[0] == _grbp(grades[0, :5], counts[0])


def test_a_function_numba_cannot_compile_runs_in_python_with_one_line_on_stderr(capsys):
    from fractions import Fraction

    def exact_share(grades, counts):
        return Fraction(int((np.asarray(grades) > 0).sum()), max(int(counts.sum()), 1))  # not compilable

    measure = me.per_list(exact_share)
    r = me.Rankings.from_lists([[2, 0, 1], [1, 1, 0, 2]], counts=[[3, 2, 2]] * 2)
    with mode(compiled=True), warning_yardstick():
        first, second = measure(r), measure(r)
    np.testing.assert_array_equal(first, [2 / 7, 3 / 7])
    np.testing.assert_array_equal(second, first)
    assert "numba cannot compile it" in measure.evaluator.python_only
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1  # once per plug-in, however often it is called
    assert lines[0].startswith("meta-eval: per-list plug-in exact_share runs in Python, one call a list")
    assert "numba cannot compile it" in lines[0] and "write it vectorised over me.Rankings" in lines[0]


def test_no_line_when_python_is_not_slower_than_a_vectorised_metric(capsys):
    measure = me.per_list(_numpy_sum)
    with mode(compiled=True), warning_yardstick(factor_always_large=False):
        measure(long_lists())
    assert "differ" in measure.evaluator.python_only
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------------------------------------ impure functions


def test_a_global_changed_after_compiling_is_detected_and_python_s_value_used():
    """numba freezes a module global when it compiles; the check against Python sees the change."""
    global SCALE
    SCALE = 1.0

    def scaled(grades, counts):
        return SCALE * len(grades)

    measure = me.per_list(scaled)
    r = me.Rankings.from_lists([[2, 0, 1], [1], [0, 0, 0, 0]], counts=[[3, 2, 2]] * 3)
    with mode(compiled=True):
        np.testing.assert_array_equal(measure(r), [3.0, 1.0, 4.0])
        assert measure.evaluator.compiled is not None
        SCALE = 2.0
        np.testing.assert_array_equal(measure(r), [6.0, 2.0, 8.0])
    assert "differ" in measure.evaluator.python_only


def test_an_impure_function_numba_cannot_compile_is_called_once_a_list_in_order():
    """State carried from list to list (here a Python list numba cannot compile) sees the calls the plain loop
    makes: harmless."""
    seen = []

    def counter(grades, counts):
        seen.append(len(grades))
        return float(len(seen))

    measure = me.per_list(counter)
    r = me.Rankings.from_lists([[2, 0, 1], [1], [0, 0, 0, 0], []], counts=[[3, 2, 2]] * 4)
    with mode(compiled=True), warning_yardstick(factor_always_large=False):
        np.testing.assert_array_equal(measure(r), [1.0, 2.0, 3.0, 4.0])
    assert seen == [3, 1, 4, 0]


def test_random_values_are_detected():
    def noisy(grades, counts):
        return np.random.random()  # numba's generator is not numpy's

    measure = me.per_list(noisy)
    with mode(compiled=True), warning_yardstick(factor_always_large=False):
        values = measure(me.Rankings.from_lists([[1, 0]] * 8, counts=[[1, 1]] * 8))
    assert "differ" in measure.evaluator.python_only
    assert ((values >= 0) & (values < 1)).all()


# ------------------------------------------------------------------------------------------------ the rest


def test_empty_rankings_and_a_single_list():
    measure = me.per_list(_grbp)
    empty = me.Rankings(np.zeros((0, 3, 4), dtype=np.int8), np.zeros((0, 3), dtype=np.int64), np.ones(3, np.int64))
    assert measure(empty).shape == (0, 3)
    one = me.Rankings(np.array([2, 1, PAD], dtype=np.int8), np.array(2), np.array([1, 1, 1]))
    with mode(compiled=True):
        value = measure(one)
    assert value.shape == () and value == _grbp(np.array([2, 1]), np.array([1, 1, 1]))


def test_a_worker_process_decides_afresh():
    measure = me.per_list(_grbp)
    with mode(compiled=True):
        measure(me.Rankings.from_lists([[2, 0, 1]], counts=[[3, 2, 2]]))
    assert measure.evaluator.compiled is not None
    copy = pickle.loads(pickle.dumps(measure.evaluator))
    assert copy.compiled is None and copy.python_lists == 0 and copy.func is _grbp
