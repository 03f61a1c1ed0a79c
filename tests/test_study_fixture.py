"""The demo study's and the battery commands' CSVs and LaTeX tables against the files stored by
``scripts/study_fixture.py``, to what another CPU guarantees (text and integers exactly, floats to a stated relative
tolerance: see the script's docstring). A change that alters a table on purpose regenerates the fixture in the same
commit and says why."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("study_fixture", REPO / "scripts" / "study_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()


def test_fixture_covers_every_configuration_of_the_script():
    stored = sorted(p.name.removesuffix(".json.gz") for p in SCRIPT.FIXTURE.glob("*.json.gz"))
    assert stored == sorted(SCRIPT.CONFIGS)
    for name, args in SCRIPT.CONFIGS.items():
        record = SCRIPT.load(name)
        assert record["args"] == args, name
        assert record["files"] and len(record["commit"]) == 40 and record["reason"], name


@pytest.mark.parametrize("name", sorted(SCRIPT.CONFIGS))
def test_outputs_equal_the_fixture_to_what_is_guaranteed(name, tmp_path):
    record = SCRIPT.load(name)
    problems = SCRIPT.compare(record["files"], SCRIPT.run(record["args"], tmp_path / "out"))
    assert not problems, (f"{name} differs from the fixture of commit {record['commit']}: {problems[:8]}; if on "
                          f"purpose, rerun scripts/study_fixture.py --only {name} --reason '...' in the same commit")


def test_the_comparison_fails_on_a_real_change_and_passes_on_rounding_noise():
    csv = "metric,n,value,label\nAP,3,0.5,x\nGAP,4,0.25,y\n"
    assert SCRIPT.compare_csv(csv, csv.replace("0.25", "0.25000000000000006")) == []  # one unit in the last place
    assert SCRIPT.compare_csv(csv, csv.replace("0.25", "0.2501"))  # a real change
    assert SCRIPT.compare_csv(csv, csv.replace(",4,", ",5,"))  # an integer
    assert SCRIPT.compare_csv(csv, csv.replace(",y", ",z"))  # text
    assert SCRIPT.compare_csv(csv, csv + "P@10,1,0.1,z\n")  # a row
    tex = r"AP & \textbf{85.1} & 0.112 \\ 32 systems"
    assert SCRIPT.compare_tex(tex, tex.replace("0.112", "0.113")) == []  # a value on a rounding boundary
    assert SCRIPT.compare_tex(tex, tex.replace("0.112", "0.114"))
    assert SCRIPT.compare_tex(tex, tex.replace("32", "31"))
    assert SCRIPT.compare_tex(tex, tex.replace(r"\textbf{85.1}", "85.1"))  # a bold mark
    files = {"informativeness_lists.csv": "entropy,max_residual\n41.5772585,2.8e-14\n"}
    noisy = {"informativeness_lists.csv": "entropy,max_residual\n41.5772586,7.1e-13\n"}
    assert SCRIPT.compare(files, noisy) == []  # the solver's accuracy; its residuals are noise
    assert SCRIPT.compare(files, {"informativeness_lists.csv": "entropy,max_residual\n41.58,2.8e-14\n"})
    assert SCRIPT.compare(files, {**files, "extra.csv": "a\n1\n"})
