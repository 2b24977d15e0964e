"""Goal text is language: stopwords and commit-message filler never rank a file."""

from __future__ import annotations

from pathlib import Path

from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.rank import goal_terms
from durable_navigator.repomap.stopwords import STOPWORDS
from tests.support import FIXTURE_REPO


def test_goal_terms_drop_stopwords_but_keep_identifiers() -> None:
    terms = goal_terms("How does the navigator enforce the USD budget? Fix get_budget_limit for the CLI", 2)
    assert not set(terms) & {"how", "does", "the", "fix"}
    assert {"navigator", "enforce", "usd", "budget", "get_budget_limit", "limit", "cli"} <= set(terms)


def test_no_file_ranks_because_of_a_stopword(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    # prose full of "the" and "how" — and no word of the goal's subject
    (root / "docs" / "prose.md").write_text("How the thing does the work, and how the other one does it.\n" * 40)
    (root / "ledger.py").write_text("class Ledger:\n    def reserve(self, budget):\n        return budget\n")
    engine = RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)
    ranked = engine.rank(FlightPlan(goal="how does the ledger reserve the budget?"))
    assert ranked[0].path == "ledger.py"
    prose = next(r for r in ranked if r.path == "docs/prose.md")
    assert prose.signals.get("bm25", 0.0) == 0.0
    text = engine.render(FlightPlan(goal="how does the ledger reserve the budget?")).text
    assert not any(f"bm25:{w}" in text for w in ("the", "how", "does", "an", "a"))


def test_the_fixture_map_never_says_why_bm25_the(tmp_path: Path) -> None:
    engine = RepoMap.open(FIXTURE_REPO, cache_dir=tmp_path / "cache", jobs=1)
    text = engine.render(FlightPlan(goal="why are the tokens double-counted by the budget plugin?")).text
    whys = [w for line in text.splitlines() if " why=" in line for w in line.split(" why=")[1].split(",")]
    assert whys and not [w for w in whys if w.startswith("bm25:") and w[5:] in STOPWORDS]


def test_an_acronyms_plural_is_the_acronym_not_two_fragments() -> None:
    """``URLs`` split as ``UR`` + ``Ls`` gave the goal and every bag the junk terms ``ur``/``ls``."""
    from durable_navigator.repomap.index import split_identifier

    assert split_identifier("URLs") == ("url", "urls")
    assert split_identifier("getHTTPSUrls") == ("get", "https", "urls", "gethttpsurls")
    assert split_identifier("HTTPServer") == ("http", "server", "httpserver")  # no plural: as before
    assert not {"ur", "ls"} & set(goal_terms("Simplify processing of username and password for unencoded URLs", 2))
