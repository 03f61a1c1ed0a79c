"""The metric template ``examples/my_metric.py``: its numbers against hand-worked values and a plain reference, its
declaration, and the study the README runs on it, through the command line on the demo collection."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

import meta_eval as me

TEMPLATE = REPO / "examples" / "my_metric.py"
GRR = f"{TEMPLATE}:GRR"
PER_LIST = f"{TEMPLATE}:grr_per_list"
DEMO = REPO / "data" / "demo"


def reference_grr(grades: list[int], max_grade: int, k: int | None = None) -> float:
    """GRR written out from its definition: the mean over thresholds j = 1..c of 1 / (first rank with grade >= j)."""
    top = grades[:k] if k is not None else grades
    terms = []
    for j in range(1, max_grade + 1):
        ranks = [r for r, g in enumerate(top, start=1) if g >= j]
        terms.append(1.0 / ranks[0] if ranks else 0.0)
    return sum(terms) / max(max_grade, 1)


def test_hand_worked_values():
    """The docstring's examples, (2, 0, 1) -> 1 and (1, 0, 2) -> 2/3, and lists without a relevant document."""
    lists = [[2, 0, 1], [1, 0, 2], [0, -1, -2], []]
    counts = [[5, 1, 1]] * 4
    expected = [1.0, (1 + 1 / 3) / 2, 0.0, 0.0]
    assert np.allclose(me.score_lists(GRR, lists, counts=counts), expected, rtol=0, atol=1e-15)
    assert np.allclose(me.score_lists(PER_LIST, lists, counts=counts), expected, rtol=0, atol=1e-15)
    assert np.allclose(me.score_lists(f"{GRR}@2", [[1, 0, 2]], counts=[[5, 1, 1]]), [0.5], rtol=0, atol=1e-15)


def test_binary_grr_is_rr():
    """With one relevance grade the user's threshold is fixed: GRR is reciprocal rank."""
    rng = np.random.default_rng(7)
    lists = [list(rng.integers(-1, 2, size=int(rng.integers(0, 12)))) for _ in range(200)]
    counts = [[8, 4]] * len(lists)
    assert np.allclose(me.score_lists(GRR, lists, counts=counts), me.score_lists("RR", lists, counts=counts),
                       rtol=0, atol=1e-15)


def test_both_forms_match_the_definition_on_the_demo():
    """Every (run, topic) list of the demo collection: the vectorised form, the per-list form and the definition."""
    col = me.demo_collection()
    r = col.rankings
    max_grade = r.counts.shape[-1] - 1
    grades = np.asarray(r.grades)
    n_ret = np.broadcast_to(r.n_ret, r.shape)
    want = np.array([[reference_grr([int(g) for g in grades[s, t, :n_ret[s, t]]], max_grade)
                      for t in range(r.shape[1])] for s in range(r.shape[0])])
    want10 = np.array([[reference_grr([int(g) for g in grades[s, t, :n_ret[s, t]]], max_grade, 10)
                        for t in range(r.shape[1])] for s in range(r.shape[0])])
    assert np.allclose(me.score(col, GRR), want, rtol=0, atol=1e-14)
    assert np.allclose(me.score(col, PER_LIST), want, rtol=0, atol=1e-14)
    assert np.allclose(me.score(col, f"{GRR}@10"), want10, rtol=0, atol=1e-14)


def test_declaration_checked_before_any_work():
    """The cutoff's declared domain: GRR@0 is refused, naming the parameter and its allowed values."""
    with pytest.raises(me.InputError, match=r"\[1, inf\)"):
        me.score_lists(f"{GRR}@0", [[1]], counts=[[1, 1, 1]])


def test_template_passes_the_measure_contract():
    from meta_eval.orchestration.contract import check_measure

    assert check_measure(GRR).family.source
    assert check_measure(PER_LIST).family.source


# ------------------------------------------------------------------------------------------------ the study

def _readme_study_command() -> str:
    """The study command the README shows after ``<!-- example-study -->``: the one this test runs."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- example-study -->", 1)[1].split("```", 2)[1]
    commands = [line for line in block.splitlines()[1:] if line.strip()]
    assert len(commands) == 1 and commands[0].startswith("meta-eval study -m examples/my_metric.py:GRR")
    return commands[0]


def _plain_demo_grr() -> dict[tuple[str, str], float]:
    """GRR of every (run, topic) of the demo, read without meta-eval: qrels and gzip runs parsed here, documents
    ordered as trec_eval orders them (score descending, then docid descending), unjudged documents not relevant."""
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (DEMO / "qrels.txt").read_text().splitlines():
        topic, _, doc, grade = line.split()
        qrels[topic][doc] = int(grade)
    max_grade = max(g for docs in qrels.values() for g in docs.values())
    out = {}
    for path in sorted((DEMO / "runs").glob("*.gz")):
        lists: dict[str, list[tuple[float, str]]] = defaultdict(list)
        name = None
        for line in gzip.decompress(path.read_bytes()).decode().splitlines():
            topic, _, doc, _, score, name = line.split()
            lists[topic].append((float(score), doc))
        for topic, judged in qrels.items():
            ranked = sorted(lists.get(topic, []), key=lambda sd: (sd[0], sd[1]), reverse=True)
            out[(name, topic)] = reference_grr([judged.get(doc, -1) for _, doc in ranked], max_grade)
    return out


@pytest.mark.slow
def test_readme_study_of_the_template(tmp_path):
    """The README's command, run as a user runs it (examples/ beside the working folder, no --qrels: the demo):
    a complete report in which the new metric is scored exactly and studied by every analysis."""
    shutil.copytree(REPO / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
               XDG_CACHE_HOME=str(tmp_path / "cache"), META_EVAL_PROGRESS="off", MPLBACKEND="Agg")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run(["bash", "-c", _readme_study_command()], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=1800, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = tmp_path / "meta-eval-study"
    assert (out / "report.html").stat().st_size > 0

    scores = pd.read_csv(out / "scores.csv", dtype={"topic": str})
    grr = scores[scores.measure == "GRR"].set_index(["run", "topic"])["value"]
    want = _plain_demo_grr()
    assert len(grr) == len(want) == 32 * 20
    assert max(abs(grr[key] - value) for key, value in want.items()) < 1e-12

    discpower = pd.read_csv(out / "discpower_summary.csv")
    assert set(discpower.metric) == {"GRR", "AP", "GAP", "nDCG"}  # the plug-in and the three references
    informativeness = pd.read_csv(out / "informativeness.csv")
    assert "GRR" in set(informativeness.metric)
    properties = pd.read_csv(out / "properties.csv")
    assert (properties.metric == "GRR").any()
    report = (out / "report.md").read_text(encoding="utf-8")
    assert re.search(r"The new metric GRR holds \d of Moffat's seven properties", report)
