"""The plug-in path: a user's metric from a file or module, used like a built-in."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import meta_eval as me

EXAMPLE = Path(__file__).parent / "data" / "my_metric.py"


def test_metric_from_file_is_scored_like_a_builtin():
    (measure,) = me.load_metric(f"{EXAMPLE}:grbp")
    col = me.demo_collection()
    ours = me.score(col, measure)
    # independent: RBP at each threshold, averaged
    expected = (me.score(col, "RBP(p=0.8)") + me.score(me.demo_collection(rel_level=2), "RBP(p=0.8)")) / 2
    np.testing.assert_allclose(ours, expected, atol=1e-12)
    assert measure.name == "grbp"
    with pytest.raises(me.InputError, match="did you mean .*my_metric.py:grbp"):
        me.get_measure("grbp")  # a plug-in never joins the built-in names


def test_per_list_metric_is_vectorised():
    (measure,) = me.load_metric(f"{EXAMPLE}:top_grade_rank")
    r = me.Rankings.from_lists([[0, 1, 2], [2, 2], [1, 0]], counts=[[3, 2, 2]] * 3)
    np.testing.assert_allclose(measure(r), [1 / 3, 1.0, 0.0])


def test_builtin_names_pass_through():
    assert [m.name for m in me.load_metric("GAP(g=0.5,0.5)")] == ["GAP(g=0.5,0.5)"]
    assert [m.name for m in me.load_metric("nDCG(gain=1:3,2:9)")] == ["nDCG(gain=1:3,2:9)"]


def test_plugin_errors_are_clear(tmp_path):
    with pytest.raises(me.InputError, match="not found"):
        me.load_metric(f"{tmp_path / 'none.py'}:f")
    with pytest.raises(me.InputError, match="no metric or function named"):
        me.load_metric(f"{EXAMPLE}:nothing_here")
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(me.InputError, match="boom"):
        me.load_metric(f"{broken}:f")
    with pytest.raises(me.InputError, match="unknown measure"):
        me.load_metric("NoSuchMetric")
