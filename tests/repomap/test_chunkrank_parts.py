"""Per-file chunk parts: the joined store equals the one-pass build, an edit re-chunks only that file,
and a stored part that is torn or of another layout is chunked again, never trusted."""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path

import numpy as np
import pytest

from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.cache import IndexCache
from durable_navigator.repomap.chunkrank import chunks, fromengine, parts
from durable_navigator.repomap.chunkrank.chunks import FilePart, RepoChunks, file_part
from durable_navigator.repomap.chunkrank.parts import PART_FORMAT, decode_part, encode_part, file_parts, part_key
from durable_navigator.repomap.config import EngineConfig
from durable_navigator.repomap.discover import RACY_WINDOW_NS

from .chunks_oracle import differences, one_pass

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _tree(root: Path) -> Path:
    """Real fixture trees (9 languages, files with and without symbols) plus files the chunker treats
    specially: an empty file, a file of blank lines, a long class split into members."""
    shutil.copytree(FIXTURES / "repos", root / "repos")
    shutil.copytree(FIXTURES / "navigator_repo", root / "navigator_repo")
    (root / "empty.py").write_text("")
    (root / "blank.txt").write_text("\n\n   \n")
    body = "".join(f"    def m{i}(self):\n" + "        x = 1\n" * 30 for i in range(5))
    (root / "big.py").write_text("import os\n\nclass Big:\n    '''doc'''\n" + body)
    return root


def _oracle(engine: RepoMap) -> dict:
    """The store as the one-pass constructor built it from the engine's lines and symbols."""
    lines = {p: engine.read_lines(p, 1, 1 << 62).splitlines() for p in engine.files}
    syms = {p: [(s.start_line, s.end_line, s.name, s.kind) for s in engine.symbols(p)] for p in engine.files}
    return one_pass(engine.files, lines, syms)


def _open(root: Path, cache: Path, jobs: int = 1, chunk_parts: bool = True, **cfg: int) -> RepoMap:
    """An engine as the navigator opens it (its index cuts the chunk parts) unless ``chunk_parts=False``."""
    fromengine._CACHE.clear()  # a new process: nothing built in memory
    return RepoMap.open(root, config=EngineConfig(**cfg), cache_dir=cache, jobs=jobs, chunk_parts=chunk_parts)


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths chunked in this process from now on (by the index or by the chunk stage)."""
    seen: list[str] = []

    def counted(path: str, src: list[str], symbols: list) -> FilePart:
        seen.append(path)
        return file_part(path, src, symbols)

    monkeypatch.setattr(parts, "file_part", counted)  # the chunk stage's own chunking
    monkeypatch.setattr(chunks, "file_part", counted)  # and the index's (``file_part_blob``, jobs=1: in process)
    return seen


def test_parts_joined_equal_the_one_pass_store_in_process_and_in_workers(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    engine = _open(root, tmp_path / "c1")
    want = _oracle(engine)
    assert len(want["spans"]) > 40 and any(s.name == "m2" for s in want["spans"])
    assert differences(fromengine.repo_chunks(engine), want) == []
    # a cold index in two worker processes stores each indexed file's part: nothing is left to chunk
    engine2 = _open(root, tmp_path / "c2", jobs=2, parallel_min_files=1)
    kept, got, derived = file_parts(engine2)
    assert derived == 0 and kept == want["files"]
    assert differences(RepoChunks.from_parts(kept, got), want) == []
    # parts the cache lacks (an index of an older layout) are chunked by two worker processes
    db = sqlite3.connect(IndexCache(tmp_path / "c2").path)
    with db:
        db.execute("DELETE FROM parts")
    db.close()
    assert engine2.derive_jobs(len(engine2.files)) == 2
    kept, got, derived = file_parts(engine2)
    assert derived == len(engine2.files) and kept == want["files"]  # the empty file: derived, no row
    assert differences(RepoChunks.from_parts(kept, got), want) == []
    # and the store a warm open reads back is that too
    assert differences(RepoChunks.from_bytes(RepoChunks.from_parts(kept, got).to_bytes()),
                       {k: v for k, v in want.items() if k not in ("name_vocab", "name_tf")}) == []


def test_an_edit_rechunks_only_the_edited_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path / "repo")
    cache = tmp_path / "cache"
    fromengine.repo_chunks(_open(root, cache))
    seen = _counting(monkeypatch)
    engine = _open(root, cache)
    kept, _parts, derived = file_parts(engine)
    assert (derived, seen) == (0, [])  # same contents (just written: read and compared): all from the cache
    time.sleep(RACY_WINDOW_NS / 1e9 + 0.2)  # older than the racy window: their stats prove their contents
    read: list[str] = []
    for name in ("_read", "_read_indexed"):  # every way a file is read for its chunks
        real = getattr(parts, name)
        monkeypatch.setattr(parts, name, lambda root, sniff, path, real=real: read.append(path) or real(root, sniff, path))
    assert file_parts(_open(root, cache))[2] == 0 and read == []  # proven by stat: not even read
    edited = next(p for p in kept if p.startswith("navigator_repo/") and p.endswith(".py"))
    (root / edited).write_text((root / edited).read_text() + "\n\ndef appended_helper(budget):\n    return budget\n")
    engine = _open(root, cache)
    rc = fromengine.repo_chunks(engine)
    assert seen == [edited] and read == [edited]  # chunked once (by the index), read once (just written: compared)
    assert differences(rc, _oracle(engine)) == []
    assert any(s.name == "appended_helper" and s.path == edited for s in rc.spans)


def test_a_torn_or_foreign_stored_part_is_chunked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path / "repo")
    cache = tmp_path / "cache"
    engine = _open(root, cache)
    fromengine.repo_chunks(engine)
    foreign = "big.py"
    torn = next(p for p in engine.files if p.startswith("navigator_repo/") and p.endswith(".py"))
    keys = {p: part_key(p, engine.current_text(p)[1] or "") for p in (torn, foreign)}
    good = IndexCache(cache).get_parts(keys.values())
    db = sqlite3.connect(IndexCache(cache).path)
    with db:
        db.execute("UPDATE parts SET blob=? WHERE key=?", (good[keys[torn]][:-7], keys[torn]))
        db.execute("UPDATE parts SET blob=? WHERE key=?",
                   (good[keys[foreign]].replace(PART_FORMAT.encode(), b"repochunks-0-80-40-part-1"), keys[foreign]))
    db.close()
    # and the whole-version blob is gone (a new version): the parts are what is read
    for f in IndexCache(cache).structures_dir.glob("*.rs"):
        f.unlink()
    seen = _counting(monkeypatch)
    engine = _open(root, cache)
    rc = fromengine.repo_chunks(engine)
    assert sorted(seen) == sorted([torn, foreign])
    assert differences(rc, _oracle(engine)) == []
    assert IndexCache(cache).get_parts(keys.values()) == good  # rewritten whole


def test_a_file_changed_since_its_index_is_chunked_as_it_is_and_not_stored(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    cache = tmp_path / "cache"
    engine = _open(root, cache)
    (root / "big.py").write_text("def replaced():\n    return 1\n")  # after the index was built
    text, key = engine.current_text("big.py")
    assert key is None and text.startswith("def replaced")
    rc = fromengine.repo_chunks(engine)
    # its lines as they are now, its symbols as indexed: what the one-pass build read too
    assert differences(rc, _oracle(engine)) == []
    assert [(s.start, s.end) for s in rc.spans if s.path == "big.py"] == [(1, 2)]
    indexed = part_key("big.py", engine._built.keys["big.py"])
    # under the indexed content's key stays that content's part (the index stored it), never the new text's
    stored = decode_part(IndexCache(cache).get_parts([indexed])[indexed])
    assert stored is not None and stored.n_lines > 100


def test_decode_refuses_what_it_did_not_write_consistently() -> None:
    part = file_part("pkg/a.py", ["def f(x):", "    return x", "", "y = 2"], [(1, 2, "f", "function")])
    blob = encode_part(part)
    back = decode_part(blob)
    assert back is not None and back.vocab == part.vocab and np.array_equal(back.cols, part.cols)
    bad_cols = encode_part(FilePart(part.n_lines, part.starts, part.ends, part.names, part.kinds, part.vocab[:1],
                                    part.cols, part.counts, part.indptr))
    bad_span = encode_part(FilePart(1, part.starts, part.ends, part.names, part.kinds, part.vocab, part.cols,
                                    part.counts, part.indptr))
    for bad in (b"", b"not marshal", blob[:-3], bad_cols, bad_span,
                blob.replace(PART_FORMAT.encode(), b"repochunks-1-80-40-part-0")):
        assert decode_part(bad) is None


def test_an_index_for_a_map_alone_cuts_no_parts_and_the_chunks_come_out_the_same(tmp_path: Path) -> None:
    """``repo-map`` never ranks chunks: its cold index does not pay for them (40% more time and 70%
    more cache on a 20,000-file tree); an engine that later needs them derives them, identical."""
    root = _tree(tmp_path / "repo")
    engine = _open(root, tmp_path / "c", jobs=2, chunk_parts=False, parallel_min_files=1)
    db = sqlite3.connect(IndexCache(tmp_path / "c").path)
    assert db.execute("SELECT COUNT(*) FROM parts").fetchone()[0] == 0
    db.close()
    kept, got, derived = file_parts(engine)
    assert derived == len(engine.files)
    assert differences(RepoChunks.from_parts(kept, got), _oracle(engine)) == []
