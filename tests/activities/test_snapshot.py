"""Snapshots of a working tree in a real S3-compatible store (SeaweedFS), and their trees on a worker.

The snapshot holds what the engine would index — uncommitted and untracked files included, ignored
ones left out — and the skips it would list; a second snapshot of the same tree sends only what
changed; a tree materialized from it lists the same files and skips and renders the same map; two
materializations at once end with one tree; a manifest naming a path outside its tree is refused.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pydantic import ValidationError

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.s3store import S3ArtifactStore, parse_s3_url
from durable_navigator.activities.snapshot import Manifest, materialize_snapshot, take_snapshot
from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.cli import gc_run
from durable_navigator.cli.gc_run import _closure, _hashes
from durable_navigator.navcore.run.sources import SNAPSHOT_MEDIA_TYPE, locator
from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.chunkrank.fromengine import repo_history
from durable_navigator.repomap.config import EngineConfig
from durable_navigator.repomap.discover import discover
from tests.support.cli import FIXTURE_REPO
from tests.support.seaweed import ACCESS_KEY, BUCKET, SECRET_KEY, SeaweedS3


def _store(s3: SeaweedS3) -> S3ArtifactStore:
    return S3ArtifactStore(parse_s3_url(f"s3://{BUCKET}/snap-{uuid.uuid4().hex[:8]}", "default"),
                           endpoint_url=s3.endpoint_url, access_key=ACCESS_KEY, secret_key=SECRET_KEY)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(repo)})


@pytest.fixture
def work_tree(tmp_path: Path) -> Path:
    """A git repository with a commit, then an edit, an untracked file, an ignored one and skipped ones."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, repo)
    (repo / ".gitignore").write_text("build/\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "first")
    ledger = repo / "src" / "budgetkit" / "ledger.py"
    ledger.write_text(ledger.read_text() + "\n\ndef audit_ledger():\n    return 'uncommitted'\n")
    (repo / "src" / "budgetkit" / "untracked.py").write_text("def fresh():\n    return 1\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.py").write_text("IGNORED = True\n")
    (repo / "poetry.lock").write_text("lock\n")
    (repo / "big.py").write_bytes(b"x = 1\n" * 300_000)  # over the engine's 1 MiB file limit
    (repo / "escape.py").symlink_to("/etc/hostname")
    return repo


def _listing(root: Path) -> tuple[list[str], dict[str, str]]:
    disc = discover(root, EngineConfig().discover)
    return [f.path for f in disc.files], dict(disc.skipped_paths)


def test_a_snapshot_holds_the_tree_as_the_engine_sees_it(work_tree: Path, tmp_path: Path,
                                                           s3_server: SeaweedS3) -> None:
    store = _store(s3_server)
    first = take_snapshot(work_tree, store)
    manifest = Manifest.model_validate_json(store.get_bytes(ArtifactRef(
        sha256=first.source.manifest_sha256, size=first.source.manifest_size, media_type=SNAPSHOT_MEDIA_TYPE)))
    paths = [row[0] for row in manifest.files]
    assert "src/budgetkit/untracked.py" in paths and "build/out.py" not in paths and "big.py" not in paths
    ledger = next(row for row in manifest.files if row[0] == "src/budgetkit/ledger.py")
    assert b"uncommitted" in store.get_bytes(ArtifactRef(sha256=ledger[1], size=ledger[2]))  # the edited bytes
    assert dict(manifest.placeholders) == {"big.py": 1_800_000, "poetry.lock": 0}
    assert dict(manifest.links) == {"escape.py": "/etc/hostname"}
    assert first.source.label == str(work_tree) and first.uploaded_files == first.files == len(paths)
    # the same tree again: nothing but the manifest; one edit: that file only
    again = take_snapshot(work_tree, store)
    assert (again.source, again.uploaded_files, again.uploaded_bytes) == (first.source, 0, 0)
    (work_tree / "src" / "budgetkit" / "untracked.py").write_text("def fresh():\n    return 2\n")
    edited = take_snapshot(work_tree, store)
    assert edited.uploaded_files == 1 and edited.source != first.source
    # on a worker: the same files and skips, and the same map
    tree = materialize_snapshot(store, edited.source, tmp_path / "cache")
    assert tree == tmp_path / "cache" / "trees" / edited.source.manifest_sha256
    assert _listing(tree)[0] == _listing(work_tree)[0]
    shown = {k: v for k, v in _listing(work_tree)[1].items() if not k.startswith("build/")}
    assert _listing(tree)[1] == shown
    plan = FlightPlan(goal="where are tokens charged?", token_budget=2048)
    by_path = RepoMap.open(work_tree, cache_dir=tmp_path / "idx").render(plan).text
    by_snapshot = RepoMap.open(tree, cache_dir=tmp_path / "idx").render(plan).text
    assert by_snapshot == by_path and "git:" in by_path  # the origin's commit too, in the map's header
    assert repo_history(tree).n == repo_history(work_tree).n == 1  # and its history (the offline ranker's)


def test_two_materializations_at_once_end_with_one_tree(work_tree: Path, tmp_path: Path,
                                                         s3_server: SeaweedS3) -> None:
    store = _store(s3_server)
    source = take_snapshot(work_tree, store).source
    cache = tmp_path / "cache"
    with ThreadPoolExecutor(4) as pool:
        trees = list(pool.map(lambda _: materialize_snapshot(store, source, cache), range(4)))
    assert len(set(trees)) == 1
    # no temp dir left: the tree, and its git origin beside it
    assert sorted(p.name for p in (cache / "trees").iterdir()) == [source.manifest_sha256,
                                                                   f"{source.manifest_sha256}.origin.json"]
    blobs = [p for p in (cache / "blobs").rglob("*") if p.is_file()]
    assert len(blobs) == len({p.name for p in blobs})  # each blob downloaded to one place
    # every file is the host's blob itself (hard-linked, not copied): a download racing another must not
    # replace a blob a tree already links to (seen once: os.replace left the tree with private copies)
    manifest = Manifest.model_validate_json(store.get_bytes(ArtifactRef(
        sha256=source.manifest_sha256, size=source.manifest_size, media_type=SNAPSHOT_MEDIA_TYPE)))
    for rel, sha, _, mode in manifest.files:
        if not mode & 0o111:
            assert (trees[0] / rel).stat().st_ino == (cache / "blobs" / sha[:2] / sha).stat().st_ino, rel


@pytest.mark.parametrize("path", ["../outside.py", "/etc/passwd", "a/../../b.py", ""])
def test_a_manifest_never_writes_outside_its_tree(path: str) -> None:
    row = [path, "0" * 64, 1, 0o644]
    with pytest.raises(ValidationError):
        Manifest.model_validate_json(json.dumps({"version": 1, "files": [row]}))


def test_gc_keeps_every_blob_of_a_snapshot_its_run_names(work_tree: Path, tmp_path: Path) -> None:
    """A run names only the manifest (in its locator); ``navigator gc`` keeps the files and the git log
    through it, since it reads kept blobs for the hashes they name."""
    store = LocalArtifactStore(tmp_path / "artifacts")
    source = take_snapshot(work_tree, store).source
    present = {b.sha256: b for b in store.blobs()}
    named = _hashes(locator(source).encode())  # what gc finds in the run's history: the manifest's hash
    assert named == {source.manifest_sha256}
    assert _closure(store, named, present) == set(present)  # manifest, every file, the git log


def test_gc_follows_a_manifest_over_the_scan_limit(tmp_path: Path) -> None:
    """A tree of ~80,000 files has a manifest over 8 MiB: gc reads it anyway (it is known as a manifest by
    how the run names it), so its files are kept. Before, it was skipped for its size and every file of
    the tree was collected."""
    store = LocalArtifactStore(tmp_path / "artifacts")
    files = [store.put_bytes(f"print({i})\n".encode(), "text/plain") for i in range(3)]
    rows = [[f"pkg/m{i}.py", ref.sha256, ref.size, 0o644] for i, ref in enumerate(files)]
    # padded past the limit with placeholders (skipped files recreated empty): a big tree's manifest
    pad = [[f"vendor/generated/lockfiles/lock{i:06d}.json", 0] for i in range(180_000)]
    data = json.dumps({"version": 1, "files": rows, "placeholders": pad}).encode()
    assert len(data) > gc_run.SCAN_LIMIT
    manifest = store.put_bytes(data, SNAPSHOT_MEDIA_TYPE)
    Manifest.model_validate_json(data)
    present = {b.sha256: b for b in store.blobs()}
    history = f'{{"repo": "snapshot:{manifest.sha256}+{manifest.size}:/home/me/repo"}}'.encode()
    want = {manifest.sha256, *(f.sha256 for f in files)}
    assert _closure(store, _hashes(history), present, gc_run._manifests(history)) == want
    # named only inside a stored request (the request's JSON source), after the manifest was met
    request = store.put_bytes(json.dumps({"source": {"kind": "snapshot", "manifest_sha256": manifest.sha256,
                                                     "manifest_size": manifest.size}}).encode(), "application/json")
    present = {b.sha256: b for b in store.blobs()}
    assert _closure(store, [manifest.sha256, request.sha256], present) == want | {request.sha256}
