"""Shared fixtures. Reference data in ../shared is optional: tests that need it skip cleanly without it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs the property tests on a fixed sequence of examples (reproducible); locally they explore new ones.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def shared_path(*parts: str) -> Path:
    """Path inside ../shared, skipping the calling test when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"reference data not available: {path}")
    return path


@pytest.fixture
def shared_dir() -> Path:
    """The ../shared directory (skips the test when it does not exist)."""
    return shared_path()
