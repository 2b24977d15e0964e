"""A request names its repository once: ``source`` (path | snapshot | git), or ``repo_path`` as before."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from durable_navigator.navcore.investigation.investigation import InvestigationRequest
from durable_navigator.navcore.navigator.requests import ExplorationRequest
from durable_navigator.navcore.research.research import ResearchRequest
from durable_navigator.navcore.run.sources import (
    GitSource,
    PathSource,
    SnapshotSource,
    display_root,
    is_reference,
    locator,
    parse_locator,
)

SNAP = SnapshotSource(manifest_sha256="ab" * 32, manifest_size=812, label="/home/ana/app")
GIT = GitSource(url="https://example.com/team/app.git", ref="main", commit="c0" * 20)


@pytest.mark.parametrize("source", [PathSource(path="/srv/app"), SNAP, GIT])
def test_a_locator_names_its_source_and_what_the_user_reads(source: PathSource | SnapshotSource | GitSource) -> None:
    text = locator(source)
    parsed = parse_locator(text)
    assert locator(parsed) == text and is_reference(text) == (source.kind != "path")
    assert display_root(text) == {"path": "/srv/app", "snapshot": "/home/ana/app",
                                  "git": f"https://example.com/team/app.git@{'c0' * 20}"}[source.kind]


@pytest.mark.parametrize("model", [ExplorationRequest, ResearchRequest, InvestigationRequest])
def test_repo_path_is_read_as_the_source_it_names(model: type) -> None:
    text = "goal" if model is not ResearchRequest else "question"
    by_path = model(repo_path="/srv/app", **{text: "why?"})
    assert by_path.source == PathSource(path="/srv/app") and by_path.repo_path == "/srv/app"
    # a child run handed its parent's locator names the same snapshot
    child = model(repo_path=locator(SNAP), **{text: "why?"})
    assert child.source == SNAP and child.repo_path == locator(SNAP)
    # what is recorded is the discriminated field; a recorded ``repo_path`` input still reads
    assert model.model_validate_json(child.model_dump_json()).source == SNAP
    assert "repo_path" not in child.model_dump()
    with pytest.raises(ValidationError, match="not both"):
        model(repo_path="/srv/app", source={"kind": "path", "path": "/srv/app"}, **{text: "why?"})


@pytest.mark.parametrize("bad", [{"kind": "snapshot", "manifest_sha256": "xyz", "manifest_size": 1, "label": "/a"},
                                 {"kind": "git", "url": "https://h/r.git", "ref": "main", "commit": "main"},
                                 {"kind": "svn", "path": "/a"}, {"kind": "path", "path": ""}])
def test_a_bad_source_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ExplorationRequest(source=bad, goal="why?")
