"""Findings never crown a metric for its scale: a metric multiplied by 0.1 (a new metric "on a smaller scale") leaves
every finding of the study unchanged, and the bold marks of the compact tables stay on the same cells.

A claim across metrics ("needs the fewest topics", "the smallest difference required") made on an absolute quantity
favours the metric with the smallest range; the study makes such claims only on scale-free quantities (shares of
pairs, τ, ω², topics at a minD relative to each metric's spread, Δ over σ).
"""

from __future__ import annotations

import re

import pytest

import meta_eval as me
from meta_eval.analyses import AnalysisData, analyses

PLUGIN = '''import numpy as np
import meta_eval as me


def x(r):
    """A new metric: AP times {scale}."""
    return {scale} * me.get_measure("AP")(r)
'''


def _data(tmp_path, scale: float) -> AnalysisData:
    folder = tmp_path / str(scale).replace(".", "_")
    folder.mkdir()
    (folder / "scaled.py").write_text(PLUGIN.format(scale=scale))
    return AnalysisData.from_collection(me.demo_collection(), ["nDCG@10", "ERR", f"{folder / 'scaled.py'}:x"],
                                        against=["GAP"])


QUICK = {"discpower": dict(n_resamples=100), "correlation": dict(n_resamples=50), "split-half": dict(n_splits=10),
         "incomplete-judgments": dict(fractions=(0.5,), n_draws=2), "informativeness": dict(lists=10, g_grid=0.5,
                                                                                           no_cache=True)}
SKIP = {"ltr", "judge-agreement", "compare", "error-rates", "properties"}  # opt-in, or about the metric's definition


@pytest.mark.parametrize("decl", [a for a in analyses() if a.name not in SKIP], ids=lambda a: a.name)
def test_a_metric_times_a_tenth_changes_no_finding_and_no_bold_mark(decl, tmp_path):
    full, tenth = _data(tmp_path, 1.0), _data(tmp_path, 0.1)
    a = decl(full, **QUICK.get(decl.name, {}))
    b = decl(tenth, **QUICK.get(decl.name, {}))
    assert [f.sentence for f in a.findings()] == [f.sentence for f in b.findings()]
    for stem, table in a.compact.items():
        other = b.compact[stem]
        if table.bold is not None:
            assert table.bold.equals(other.bold), (decl.name, stem)


def test_the_scaled_metric_still_differs_in_its_own_units(tmp_path):
    """The absolute columns are kept (with their note): the test above is not blind."""
    full, tenth = _data(tmp_path, 1.0), _data(tmp_path, 0.1)
    a = analyses_by_name()["discpower"](full, n_resamples=100).compact["discpower_summary"]
    b = analyses_by_name()["discpower"](tenth, n_resamples=100).compact["discpower_summary"]
    assert float(re.sub("[^0-9.]", "", b.text("x", "Δ required"))) < float(re.sub("[^0-9.]", "", a.text("x", "Δ required")))
    assert a.text("x", "Δ/σ") == b.text("x", "Δ/σ") and "own units" in a.note


def analyses_by_name():
    return {a.name: a for a in analyses()}
