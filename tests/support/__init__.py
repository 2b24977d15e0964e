"""Helpers shared by the tests (model stand-ins, request builders, process helpers); not tests themselves."""

from __future__ import annotations

from pathlib import Path

#: the tests folder, its fixture data and the small repository most tests explore
TESTS = Path(__file__).resolve().parents[1]
#: the checkout (bench/ scripts live there)
REPO_ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"
FIXTURE_REPO = FIXTURES / "navigator_repo"
