"""Honest exit status and a dependable execution layer (issue 21): a study whose stages failed says so with a
non-zero status (its report written, the failures marked); an unreachable Dask scheduler is refused before any
work; maps that share a cluster cannot release each other's inputs."""

from __future__ import annotations

import socket
import threading

import pytest
from typer.testing import CliRunner

from meta_eval.cli import app
from meta_eval.outputs.result_folder import verify_folder
from tests.conftest import marking_plugin

runner = CliRunner()
QUICK = ["-B", "20", "--skip", "informativeness", "--skip", "incomplete-judgments", "--skip", "split-half",
         "--skip", "reusability", "--format", "png", "--dpi", "50", "--no-progress", "--jobs", "1"]


def test_study_exits_1_when_a_stage_failed_and_still_writes_the_report(tmp_path, monkeypatch):
    from dataclasses import replace

    from meta_eval.analyses import _registry as registry, get_analysis

    def broken(data, **params):
        raise RuntimeError("exploded on purpose")

    monkeypatch.setitem(registry._ANALYSES, "anova", replace(get_analysis("anova"), run=broken))
    out = tmp_path / "study"
    result = runner.invoke(app, ["study", "-o", str(out), *QUICK])
    assert result.exit_code == 1, result.output
    assert "1 analysis(es) failed (anova)" in result.output and "Traceback" not in result.output
    assert verify_folder(out) == [] and "This stage failed" in (out / "report.md").read_text()


def test_study_exits_0_when_every_stage_ran(tmp_path):
    result = runner.invoke(app, ["study", "-o", str(tmp_path / "s"), *QUICK, "--skip", "anova"])
    assert result.exit_code == 0, result.output


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


@pytest.mark.parametrize("command", [["study"], ["discpower", "-m", "AP"], ["informativeness", "-m", "AP"]])
def test_an_unreachable_scheduler_is_refused_before_any_work(tmp_path, monkeypatch, command):
    pytest.importorskip("distributed")
    import meta_eval.core.parallel as parallel

    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT", 2)
    plugin = marking_plugin(tmp_path)
    result = runner.invoke(app, [*command, "-m", f"{plugin}:marking", "--scheduler",
                                 f"tcp://127.0.0.1:{_closed_port()}", "-o", str(tmp_path / "out"), "--no-progress"])
    assert result.exit_code == 2 and "cannot reach the Dask scheduler" in result.output, result.output
    assert not (tmp_path / "scored").exists() and not (tmp_path / "out").exists()  # nothing was scored


def _echo(task, *, seed, alpha):
    return task, seed, alpha


def test_maps_sharing_a_cluster_keep_their_own_inputs():
    """Two maps on one cluster at once, with inputs under the same names (seed, alpha) but different values: each
    gets its own. Scattering the dict itself named the data 'seed' and 'alpha' on the cluster, and the first map's
    end released what the second still needed ("lost dependencies")."""
    pytest.importorskip("distributed")
    from meta_eval.core.parallel import close_clusters, parallel_map

    results: dict[int, list] = {}

    def one(k: int) -> None:
        results[k] = parallel_map(_echo, list(range(30)), common=dict(seed=k, alpha=k / 10), jobs=2,
                                  scheduler="local", progress=False)

    try:
        one(0)  # start the cluster
        threads = [threading.Thread(target=one, args=(k,)) for k in (1, 2, 3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        close_clusters()
    for k in (0, 1, 2, 3):
        assert results[k] == [(i, k, k / 10) for i in range(30)]


def test_a_parameter_given_in_a_specification_and_as_the_studys_is_refused(tmp_path):
    """``--analysis 'discpower(top=3)' --discpower-top 4`` computed top 3 and recorded 4 in the manifest."""
    from meta_eval.core.errors import InputError
    from meta_eval.orchestration.study import StudyOptions

    with pytest.raises(InputError, match="analysis discpower: top is given twice"):
        StudyOptions(analyses=["discpower(top=3)"], params={"discpower": {"top": 4}}).check()
    options = StudyOptions(analyses=["discpower(top=3)"], params={"discpower": {"methods": ["tukey"]}}).check()
    assert dict(options.added()[0][1]) == {"top": 3}  # each parameter given once: both kept
    result = CliRunner().invoke(app, ["study", "-m", "AP", "-m", "P@10", "--analysis", "discpower(top=3)",
                                      "--discpower-top", "4", "-o", str(tmp_path / "out")])
    assert result.exit_code == 2 and "top is given twice" in result.output and not (tmp_path / "out").exists()
