"""The measures layer: its arrows point one way, a measure travels to another process as where it came from, and the
engines that need more than a measure's values (MEM's expected-value forms, LambdaMART's swap deltas) find theirs
by the measure's family in a fresh interpreter, without an import having to fill a slot first."""

from __future__ import annotations

import copyreg
import multiprocessing
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import meta_eval as me
from meta_eval.measures.resolver import resolve_one
from test_architecture import LEVEL, _cycles, _graph, _layer

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "tests" / "data" / "my_metric.py"
LISTS = [[2, 0, 1, 0, 2], [0, 0, 1], [1, 1, 0, 0, 0, 2, 0], []]
COUNTS = [[6, 3, 2], [9, 1, 0], [4, 3, 1], [5, 2, 2]]

#: The modules this layer owns, and the engine modules that read measures: no cycle through them, no upward arrow.
OWNED = ("meta_eval.measures", "meta_eval.model.collection", "meta_eval.model.preferences",
         "meta_eval.statistics.maxent.expectations", "meta_eval.statistics.learning_to_rank.swap_deltas",
         "meta_eval.core.trec_eval_names", "meta_eval.core.errors")


def _owned(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in OWNED)


# ------------------------------------------------------------------------------------------------------------ arrows


def test_no_import_cycle_goes_through_the_measures_layer():
    cycles = [c for c in _cycles(_graph()) if any(_owned(m) for m in c)]
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


def test_no_upward_arrow_leaves_the_measures_layer():
    upward = sorted(f"{a} -> {b}" for a, targets in _graph().items() if _owned(a) for b in targets
                    if LEVEL[_layer(b)] > LEVEL[_layer(a)]
                    or (LEVEL[_layer(b)] == LEVEL[_layer(a)] and _layer(b) != _layer(a)))
    assert not upward, "\n".join(upward)


def test_nothing_imports_the_measures_layer_from_below():
    below = sorted(f"{a} -> {b}" for a, targets in _graph().items() for b in targets
                   if b.startswith("meta_eval.measures") and LEVEL[_layer(a)] < LEVEL["measures"])
    assert not below, "\n".join(below)


@pytest.mark.parametrize("module, may_import", [
    ("meta_eval.measures.registry", set()),
    ("meta_eval.measures.trec_names", {"meta_eval.measures.registry"}),
    ("meta_eval.measures.plugins", {"meta_eval.measures.registry", "meta_eval.measures.fingerprint"}),
])
def test_inside_the_layer_the_registry_is_at_the_bottom_and_the_resolver_on_top(module, may_import):
    """The registry imports nothing else of measures/; the spelling lookup and the plug-ins only what lies below
    them."""
    inside = {m for m in _graph()[module] if m.startswith("meta_eval.measures")}
    assert inside <= may_import, sorted(inside - may_import)


def test_only_the_package_and_scoring_import_the_resolver():
    """No module of the layer imports the package (whose __init__ imports them all) or the resolver (the top), but
    the package itself and scoring, which sits on the resolver."""
    graph = _graph()
    importers = {a for a, targets in graph.items() if a.startswith("meta_eval.measures")
                 and ("meta_eval.measures.resolver" in targets or "meta_eval.measures" in targets)}
    assert importers <= {"meta_eval.measures", "meta_eval.measures.scoring"}, sorted(importers)


# ------------------------------------------------------------------------------------------------------------ pickling


def _in_worker(measure, lists, counts):
    """What a worker process makes of a measure it received: its names, whether it is the measure its spec resolves
    to there, its values, and the measure itself (sent back)."""
    rankings = me.Rankings.from_lists(lists, counts=counts)
    again = resolve_one(measure.spec)
    return measure.output_name, measure.spec, measure == again, measure(rankings), measure


@pytest.fixture(scope="module")
def spawned():
    """One worker started by spawn: a fresh interpreter, which imports the plug-in itself."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        yield pool


@pytest.mark.parametrize("spec, spelled", [
    ("nDCG(gain=exp)@10", "nDCG(gain=exp)@10"),  # a built-in, by its canonical name
    ("GAP(g=0.25,0.75)", "GAP(g=0.25,0.75)"),
    ("ndcg_cut_10", "ndcg_cut_10"),  # a trec_eval spelling: printed and rebuilt as typed
    ("rbp_p=0.95", "rbp_p=0.95"),
    ("set_F.0.5", "set_F_0.5"),
    (f"{PLUGIN}:grbp", f"{PLUGIN}:grbp"),  # a file.py:function plug-in, by its absolute path
    (f"{PLUGIN}:top_grade_rank", f"{PLUGIN}:top_grade_rank"),
])
def test_a_measure_pickled_into_a_fresh_process_comes_back_equal(spawned, spec, spelled):
    measure = resolve_one(spec)
    assert measure.spec == spelled
    rankings = me.Rankings.from_lists(LISTS, counts=COUNTS)
    name, spec_there, same_there, values, back = spawned.apply(_in_worker, (measure, LISTS, COUNTS))
    assert (name, spec_there, same_there) == (measure.output_name, measure.spec, True)
    np.testing.assert_array_equal(values, measure(rankings))
    assert back == measure and back.output_name == measure.output_name and back.spec == measure.spec


def test_the_origin_is_not_part_of_what_a_measure_is():
    """A trec_eval spelling and the canonical name with the same label are the same measure; the origin only says
    how to make it again."""
    from dataclasses import replace

    spelled = me.get_measure("P_5")
    assert spelled.origin == "P_5" and spelled.name == "P@5"
    plain = replace(me.get_measure("P@5"), label="P_5")
    assert plain == spelled and plain.origin is None and plain.spec == "P@5"
    assert pickle.loads(pickle.dumps(plain)).spec == "P@5"


def relevant_retrieved(r):
    """Relevant documents retrieved (registered by a test, in this process only)."""
    return r.relevant().sum(-1).astype(float)


def test_a_measure_registered_in_this_process_only_travels_by_value():
    """A measure of ``meta_eval.register`` in this process (a notebook's) has no specification another process could
    resolve: it travels by value, its function by reference."""
    from meta_eval.measures.registry import Measure

    me.register("RelevantRetrievedTest")(relevant_retrieved)
    measure = me.get_measure("RelevantRetrievedTest")
    rebuild, args = copyreg.dispatch_table[Measure](measure)
    assert rebuild is Measure and args == (measure.family, measure.params, None)
    back = pickle.loads(pickle.dumps(measure))  # a copy of the family, its function guarded again
    assert (back.output_name, back.params) == (measure.output_name, measure.params)
    assert back.family.func.__wrapped__ is relevant_retrieved  # held to the plug-in contract
    rankings = me.Rankings.from_lists(LISTS, counts=COUNTS)
    np.testing.assert_array_equal(back(rankings), measure(rankings))
    assert resolve_one("AP").spec == "AP" and copyreg.dispatch_table[Measure](resolve_one("AP"))[1] == ("AP", None)


# ------------------------------------------------------------------------------------------------------------ engines


def _fresh(code: str) -> str:
    """Run ``code`` in a fresh interpreter (this checkout's meta_eval) and return what it prints."""
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_mem_and_ltr_find_their_forms_in_a_fresh_interpreter():
    """The measures are made first; the engines' modules are imported only when asked, and know every built-in
    family they declare (no slot an import has to fill)."""
    out = _fresh("""
        import sys
        import numpy as np
        from meta_eval.measures.resolver import resolve
        measures = resolve(["nDCG@10", "map", "GAP(g=0.5,0.5)", "RR@5", "ndcg_cut_10", "AP@10", "bpref"])
        engines = ("meta_eval.statistics.maxent.expectations", "meta_eval.statistics.learning_to_rank.swap_deltas")
        print("before", [e in sys.modules for e in engines])
        from meta_eval.statistics.maxent.expectations import declared_form
        from meta_eval.statistics.learning_to_rank.swap_deltas import closed_form
        for m in measures:
            print(m.output_name, declared_form(m) is not None, closed_form(m) is not None)
    """).splitlines()
    assert out[0] == "before [False, False]"
    assert out[1:] == ["nDCG@10 True True", "map True True", "GAP(g=0.5,0.5) True True", "RR@5 True False",
                       "ndcg_cut_10 True True", "AP@10 False False", "bpref False False"]


def test_a_plug_in_declares_its_own_form_keyed_by_its_family(tmp_path):
    """A plug-in file that declares its metric's form (``register_expectation`` of its function's name) gets it in
    a fresh interpreter: MEM solves with the declared form, verified against the metric."""
    plugin = tmp_path / "weighted.py"
    plugin.write_text(textwrap.dedent('''
        import numpy as np
        from meta_eval.statistics import maxent as mem

        def top_weighted(r):
            """Relevant documents weighted by 1/rank^2."""
            return (r.relevant() / r.ranks**2).sum(-1)

        @mem.register_expectation("top_weighted")
        def _form(batch, rel_level=1):
            w = 1.0 / np.arange(1, batch.depth + 1) ** 2
            coef = w[None, :, None] * (np.arange(batch.n_grades) >= rel_level)[None, None, :]
            return mem.LinearForm(np.broadcast_to(coef, (batch.n_lists, batch.depth, batch.n_grades)).copy())
    '''))
    out = _fresh(f"""
        from meta_eval.statistics.maxent import ListBatch, solve_mem
        batch = ListBatch.from_lists([[1, 0, 2, 0, 1, 0], [0, 1, 0, 0]], counts=[[8, 4, 2], [5, 2, 1]])
        for rel in (1, 2):
            res = solve_mem(batch, "{plugin}:top_weighted", rel_level=rel)
            print(res.method, bool((res.status == 0).all()), res.form_residual < 1e-12)
    """).splitlines()
    assert out == ["declared True True", "declared True True"]
