"""The demo study's and the battery commands' CSVs and LaTeX tables, byte for byte, against the fixture written by
``scripts/study_fixture.py`` (the commit that produced it is recorded in the fixture). A change that alters a table
on purpose regenerates the fixture in the same commit and says why."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURE = json.loads((REPO / "tests" / "data" / "study_digests.json").read_text())


def _script():
    spec = importlib.util.spec_from_file_location("study_fixture", REPO / "scripts" / "study_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fixture_covers_every_configuration_of_the_script():
    script = _script()
    assert set(FIXTURE["configs"]) == set(script.CONFIGS)
    for name, config in FIXTURE["configs"].items():
        assert config["args"] == script.CONFIGS[name], name
        assert config["digests"] and len(config["commit"]) == 40 and config["reason"], name


@pytest.mark.parametrize("name", sorted(FIXTURE["configs"]))
def test_outputs_are_byte_identical_to_the_fixture(name, tmp_path):
    config = FIXTURE["configs"][name]
    got = _script().run(config["args"], tmp_path / "out")
    expected = config["digests"]
    assert sorted(got) == sorted(expected), "a different set of CSV/.tex files"
    changed = sorted(f for f in expected if got[f] != expected[f])
    assert not changed, (f"{name}: {changed} differ from the fixture of commit {config['commit']}; if on purpose, "
                         f"rerun scripts/study_fixture.py --only {name} --reason '...' in the same commit")
