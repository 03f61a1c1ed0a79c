"""``meta-eval trec-eval`` against the trec_eval 10 program, built from the same sources (CI builds it from
``../shared/data/trec_eval-10.0-src.tar.gz``; ``META_EVAL_TREC_EVAL10`` or ``trec_eval10`` on the PATH; skipped
without one): standard output byte for byte and the exit status, on trec_eval's test files over many option and
measure combinations, and on random files (ties, unjudged and negatively judged documents, topics a run lacks,
comments). The combinations where trec_eval 10 is defective (``meta-eval trec-eval --help``) are checked to be
exactly those differences."""

from __future__ import annotations

import itertools
import os
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_eval.cli.trec_eval import main
from tests.test_trec_eval_binary import collection_files
from tests.trec_eval_source import extract, trec_eval10

PROGRAM = trec_eval10()
pytestmark = pytest.mark.skipif(not PROGRAM, reason="no trec_eval 10 program (META_EVAL_TREC_EVAL10, trec_eval10)")

FILES = [("qrels.test", "results.test"), ("qrels.rel_level", "results.test"), ("qrels.test", "results.trunc"),
         ("qrels-302.test", "results-302.test")]
OPTIONS = [[], ["-q"], ["-q", "-c"], ["-q", "-J"], ["-q", "-M", "50"], ["-q", "-l", "2"], ["-q", "-c", "-M", "7"],
           ["-n", "-q"]]
MEASURES = [["-m", "official"], ["-m", "all_trec"], ["-m", "set"],
            ["-m", "P.1,2,3", "-m", "ndcg_cut.5", "-m", "ndcg.1=2,2=5"],
            ["-m", "ndcg_rel.1=3", "-m", "Rndcg.1=3", "-m", "G.1=3"],
            ["-m", "dcg"], ["-m", "ideal_dcg.1=3,2=5"], ["-m", "yaap", "-m", "rbp_resid"],
            ["-m", "set_F.0.5"], ["-m", "set_F.2"], ["-N", "100", "-m", "utility"],
            ["-m", "11pt_avg..1,.9", "-m", "relstring", "-m", "success.1,3", "-m", "unj.7"],
            ["-m", "Rprec_mult.0.5", "-m", "iprec_at_recall..33", "-m", "map_cut.7", "-m", "relative_P.3",
             "-m", "recall.7"],
            ["-m", "gm_map", "-m", "gm_bpref", "-m", "infAP", "-m", "binG", "-m", "num_q", "-m", "runid"]]
OTHER = [["-q", "-m", "rbp_resid.p=0.95", "-m", "relstring.4", "-m", "utility.2,-1,0,0", "qrels.test",
          "results.test"],
         ["-q", "-m", "all_prefs", "-R", "prefs", "prefs.test", "prefs.results.test"],
         ["-q", "-M", "20", "-m", "all_prefs", "-R", "prefs", "prefs.test", "prefs.results.test"],
         ["-q", "-c", "-m", "all_prefs", "-R", "prefs", "prefs.test", "prefs.rank20"],
         ["-q", "-m", "all_prefs", "-R", "qrels_prefs", "qrels.rel_level", "results.test"],
         ["-q", "-M", "100", "-m", "all_prefs", "-R", "qrels_prefs", "qrels.test", "results.test"],
         ["-q", "-m", "qrels_jg", "-R", "qrels_jg", "qrels.123", "results.test"],
         ["-q", "-c", "-M", "30", "-m", "P_avgjg.3,8", "-m", "Rprec_mult_avgjg.0.5", "-m", "map_avgjg", "-R",
          "qrels_jg", "qrels.123", "results.trunc"],
         ["-q", "-l", "2", "-m", "qrels_jg", "-R", "qrels_jg", "qrels.123", "results.test"],
         ["-q", "-m", "all_trec", "-Z", "zscores_file", "qrels.test", "results.test"],
         ["-q", "-c", "-m", "official", "-Z", "zscores_file", "qrels.test", "results.trunc"],
         ["-m", "map", "-R", "prefs", "prefs.test", "prefs.results.test"],  # status 4: map needs qrels
         ["-m", "nosuchmeasure", "qrels.test", "results.test"],  # status 1
         ["-m", "P.", "qrels.test", "results.test"],  # status 1
         ["-R", "nosuchformat", "qrels.test", "results.test"],  # status 2
         ["qrels.test"]]  # status 1


@pytest.fixture(scope="module")
def test_dir(tmp_path_factory):
    return extract(tmp_path_factory.mktemp("trec_eval10")) / "test"


def both(args: list[str], cwd, capsys) -> tuple[tuple[int, bytes], tuple[int, bytes]]:
    """(status, stdout) of trec_eval 10 and of ``meta-eval trec-eval`` on the same command line."""
    peer = subprocess.run([PROGRAM, *args], cwd=cwd, capture_output=True)
    capsys.readouterr()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        status = main(list(args))
    finally:
        os.chdir(here)
    return (peer.returncode, peer.stdout), (status, capsys.readouterr().out.encode())


CASES = [[*o, *m, q, r] for (q, r), o, m in itertools.product(FILES, OPTIONS, MEASURES)] + OTHER


@pytest.mark.parametrize("args", CASES, ids=[" ".join(c) for c in CASES])
def test_same_output_and_status_as_trec_eval10(args, test_dir, capsys):
    assert_agrees(*both(args, test_dir, capsys))


def assert_agrees(peer: tuple[int, bytes], ours: tuple[int, bytes]) -> None:
    """The same status, and the same output but for trec_eval 10's defects that these inputs reach."""
    assert ours[0] == peer[0]
    if ours[1] != peer[1]:
        assert {d for d in differences(peer[1], ours[1]) if not d.startswith("rbp ")} <= NAN_DEFECT


# Where trec_eval 10 is defective, meta-eval keeps its value (meta-eval trec-eval --help lists these). Two more are
# not tested here because trec_eval's output is not reproducible: rbp reads uninitialised memory (m_rbp.c), and
# parameters given to one of dcg, ideal_dcg, ndcg apply to all three (one shared block, freed twice: it aborts).
DEFECTS = {
    # -J -c: the missing topic's empty list divides 0 by 0 (m_iprec_at_recall.c)
    "iprec": (["-q", "-c", "-J", "-m", "official", "qrels.test", "results.trunc"], "iprec_at_recall_0.00"),
    # -c: the missing topic's leftovers are zeroed by the plain names only (trec_eval.c compares names)
    "utility": (["-q", "-c", "-m", "utility.1,-2,0,1", "-N", "100", "qrels.test", "results.trunc"],
                "utility_1,-2,0,1"),
}


@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_trec_eval10_defects_are_the_only_differences(name, test_dir, capsys):
    args, measure = DEFECTS[name]
    (peer_status, peer), (status, mine) = both(args, test_dir, capsys)
    differing = {a.split(b"\t")[0].strip().decode() for a, b in zip(peer.splitlines(), mine.splitlines())
                 if a != b}
    assert differing and {d.removesuffix("_1=3") for d in differing} <= {measure}, differing


OPTION_SETS = st.sampled_from([["-q"], ["-q", "-c"], ["-q", "-c", "-M", "3"], ["-q", "-l", "2"], ["-q", "-J"],
                               ["-q", "-c", "-l", "2"]])


@settings(max_examples=int(os.environ.get("META_EVAL_EXAMPLES", 60)), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=collection_files(), options=OPTION_SETS)
def test_random_files_match_trec_eval10(tmp_path, capsys, files, options):
    (tmp_path / "qrels").write_text("# judgments\n" + files[0])  # comment lines are skipped by both
    (tmp_path / "run").write_text(files[1])
    args = [*options, "-m", "all_trec", "-m", "yaap", "qrels", "run"]
    assert_agrees(*both(args, tmp_path, capsys))


# trec_eval 10's defects that random files reach: interpolated precision of a list -J leaves empty is 0/0 (-nan);
# rbp's normaliser reads uninitialised memory, so its value depends on the process's environment (checked against
# the shipped outputs of the suite instead, tests/test_trec_eval_quicktest.py).
NAN_DEFECT = {"iprec_at_recall", "11pt_avg"}


def differences(peer: bytes, ours: bytes) -> set[str]:
    """The measures (cutoffs dropped) whose lines differ where trec_eval 10 prints -nan (interpolated precision
    of a list -J leaves empty, 0 divided by 0) and meta-eval 0: that defect; any other difference as itself."""
    peer_lines, our_lines = peer.decode().splitlines(), ours.decode().splitlines()
    assert len(peer_lines) == len(our_lines)
    out = set()
    for a, b in zip(peer_lines, our_lines):
        if a != b:
            name = a.split("\t")[0].strip()
            nan = a.endswith("-nan") and a.rsplit("\t", 1)[0] == b.rsplit("\t", 1)[0]
            out.add(name.rsplit("_", 1)[0] if nan and name.startswith("iprec_at_recall") else
                    name if nan else a)
    return out
