"""What a snapshot costs: bytes sent for the first, the same and an edited tree; a worker's build time.

Against a real S3-compatible server (SeaweedFS, started here on free ports), a copy of ``REPO``
(default: this repository) is snapshotted three times — fresh bucket, unchanged, one file edited
— and materialized on an empty worker cache, then (the edited snapshot) on the warm one. Prints
one Markdown table. Usage: ``python -m bench.snapshot_upload [REPO]``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

from durable_navigator.activities.s3store import S3ArtifactStore, parse_s3_url
from durable_navigator.activities.snapshot import SnapshotFigures, materialize_snapshot, take_snapshot
from tests.support.seaweed import ACCESS_KEY, BUCKET, SECRET_KEY, SeaweedS3

ROOT = Path(__file__).resolve().parents[1]


def _row(name: str, fig: SnapshotFigures, seconds: float) -> str:
    return (f"| {name} | {fig.files} | {fig.bytes_total:,} | {fig.uploaded_files} | {fig.uploaded_bytes:,} | "
            f"{fig.manifest_bytes:,} | {seconds:.2f} |")


def _blobs(cache: Path) -> int:
    return sum(1 for p in (cache / "blobs").rglob("*") if p.is_file())


def main(repo: Path) -> None:
    """Run the measurement on a copy of ``repo`` and print the table."""
    with tempfile.TemporaryDirectory() as tmp_dir, SeaweedS3(Path(tmp_dir) / "weed") as s3:
        tmp = Path(tmp_dir)
        tree = tmp / repo.name
        shutil.copytree(repo, tree, symlinks=True, ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__"))
        store = S3ArtifactStore(parse_s3_url(f"s3://{BUCKET}/bench-{uuid.uuid4().hex[:8]}", "default"),
                                endpoint_url=s3.endpoint_url, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
        rows = []
        for name in ("first snapshot", "same tree again", "one file edited"):
            if name == "one file edited":
                edited = next(p for p in sorted(tree.rglob("*.py")) if p.is_file() and p.stat().st_size > 4096)
                edited.write_text(edited.read_text() + "\n# edited\n")
            t0 = time.perf_counter()
            fig = take_snapshot(tree, store)
            rows.append(_row(name, fig, time.perf_counter() - t0))
        cache = tmp / "worker-cache"
        first = take_snapshot(tree, store).source
        t0 = time.perf_counter()
        materialize_snapshot(store, first, cache)
        cold = time.perf_counter() - t0
        print(f"repository: {repo} (copied without .git, .venv, __pycache__)\n")
        print("| snapshot | files | bytes | files sent | bytes sent | manifest B | seconds |")
        print("|---|---|---|---|---|---|---|")
        print("\n".join(rows))
        print(f"\nworker: built the tree on an empty cache in {cold:.2f} s ({_blobs(cache)} blobs downloaded)")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT)
