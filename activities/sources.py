"""A worker's view of a run's repository: the local directory a source locator names on this host.

A path is itself; a snapshot is materialized from the artifact store (:mod:`activities.snapshot`);
a git commit is checked out from this host's mirror (:mod:`activities.gitsource`). Both land under
this host's cache directory, keyed by content (manifest hash, commit), so every host that runs a
step of the run works on the same tree, and a host that has it already does no work.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs

from durable_navigator.activities.artifacts import ArtifactStore
from durable_navigator.activities.gitsource import checkout_commit
from durable_navigator.activities.snapshot import materialize_snapshot
from durable_navigator.activities.source_cache import mark_used
from durable_navigator.navcore.run.sources import GitSource, SnapshotSource, parse_locator

__all__ = ["SourceResolver", "default_source_cache"]


def default_source_cache() -> Path:
    """This host's cache of snapshot trees and git mirrors (the user cache directory)."""
    return Path(platformdirs.user_cache_dir("durable-navigator")) / "sources"


class SourceResolver:
    """Locator -> local directory, for the engine cache (blocking: call it off the event loop)."""

    def __init__(self, store: ArtifactStore, cache: Path | None = None) -> None:
        self.store = store
        self.cache = cache or default_source_cache()

    def __call__(self, text: str) -> Path:
        """The directory ``text`` names here (materialized or checked out on first use)."""
        source = parse_locator(text)
        if isinstance(source, SnapshotSource):
            tree = materialize_snapshot(self.store, source, self.cache / "snapshots")
        elif isinstance(source, GitSource):
            tree = checkout_commit(source.url, source.commit, self.cache / "git")
        else:
            return Path(source.path)
        mark_used(tree)  # its last use: ``navigator gc --caches`` prunes trees unused for a while
        return tree
