"""The chunk ranker's inputs: chunks, tokenisation, lexical scores, git history, the feature matrix."""

from __future__ import annotations

from collections import Counter

import io
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.chunkrank import FEATURES, GROUPS, EngineView, RepoChunks, chunk_features, chunk_ranges
from durable_navigator.repomap.chunkrank import fromengine
from durable_navigator.repomap.chunkrank.chunks import STORE_FORMAT, file_part, tokenize
from durable_navigator.repomap.chunkrank.fromengine import engine_view, repo_chunks, repo_history
from durable_navigator.repomap.chunkrank.history import (HISTORY_FEATURES, LINE_FEATURES, RECENT_COMMITS, FileDiff,
                                                         History, carry_forward, condense_diffs, history_from_log,
                                                         history_text, load_history, log_diffs, parse_diffs, run_log,
                                                         show_diffs)
from durable_navigator.repomap.chunkrank.lexical import bm25_scores, coverage, name_match


def test_tokenize_splits_identifiers_and_drops_stopwords_and_short_tokens() -> None:
    assert tokenize("parseHeader the max_count x 42") == ["parseheader", "parse", "header", "max_count", "max", "count"]
    assert tokenize("parseHeader") == tokenize("parseHeader")  # memoised words give the same terms


def test_chunks_are_top_level_definitions_gaps_and_split_long_containers() -> None:
    src = ["import os", "", "def a():", "    return 1", "", "def b():", "    return 2"]
    assert chunk_ranges(7, [(3, 4), (6, 7)], src) == [(1, 2), (3, 4), (6, 7)]
    # a 100-line class with two methods: split into its members plus the lines between them
    cls = ["class C:"] + ["    x = 1"] * 9 + ["    def m(self):"] + ["        pass"] * 49 + ["    def n(self):"] + \
        ["        pass"] * 39
    got = chunk_ranges(len(cls), [(1, 100), (11, 60), (61, 100)], cls)
    assert got == [(1, 10), (11, 60), (61, 100)]
    # a file without symbols: 40-line windows
    assert chunk_ranges(90, [], ["x"] * 90) == [(1, 40), (41, 80), (81, 90)]


def test_a_definitions_chunk_starts_at_the_comments_and_attributes_directly_above_it() -> None:
    src = ["use std::path::Path;",                      # 1
           "",                                          # 2
           "/// Returns a hyperlink path from an OS path.",  # 3
           "#[cfg(windows)]",                           # 4
           "fn from_path(p: &Path) -> String {",        # 5
           "    p.display().to_string()",               # 6
           "}",                                         # 7
           "// a note about the next one",              # 8
           "",                                          # 9
           "#include_not_a_comment",                    # 10
           "fn other() {}",                             # 11
           "#![allow(dead_code)]",                      # 12
           "fn third() {}"]                             # 13
    syms = [(5, 7), (11, 11), (13, 13)]
    got = chunk_ranges(len(src), syms, src)
    # the doc comment and the attribute go with the function; a blank line ends the run (line 8 is a
    # block of its own), and neither a preprocessor-like line nor an inner attribute is a lead
    assert got == [(1, 2), (3, 7), (8, 10), (11, 11), (12, 12), (13, 13)]
    # the reference's unit (the chunk-BM25 baseline) keeps the definitions as the parser gives them
    assert chunk_ranges(len(src), syms, src, leads=False) == [(1, 4), (5, 7), (8, 10), (11, 11), (12, 12), (13, 13)]
    # a chunk that starts at its definition's leading comments is named by that definition
    part = file_part("src/hyperlink.rs", src, [(5, 7, "from_path", "function"), (11, 11, "other", "function"),
                                               (13, 13, "third", "function")])
    spans = list(zip(part.starts.tolist(), part.ends.tolist(), part.names))
    assert (3, 7, "from_path") in spans and (8, 10, "") in spans
    # lines a member's comments would reach that are already in another chunk stay there
    cls = ["impl Data {", "    /// one", "    fn one() {}", "    /// two", "    #[inline]", "    fn two() {}", "}"]
    assert chunk_ranges(len(cls), [(1, 7), (3, 3), (6, 6)], cls) == [(1, 7)]  # short: one unit, as before
    long_impl = ["impl Data {"] + ["    /// one", "    fn one() {"] + ["        x();"] * 40 + ["    }"] + \
        ["    /// two", "    #[inline]", "    fn two() {"] + ["        y();"] * 40 + ["    }", "}"]
    n = len(long_impl)
    got = chunk_ranges(n, [(1, n), (3, 44), (47, n - 1)], long_impl)
    assert got == [(1, 1), (2, 44), (45, n - 1), (n, n)]


def test_bm25_matches_the_lucene_formula_and_scores_absent_terms_zero() -> None:
    tf = sp.csr_matrix(np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    got = bm25_scores(tf, [0])
    dl = np.array([2.0, 1.0, 2.0])
    norm = 1.5 * (1 - 0.75 + 0.75 * dl / dl.mean())
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    assert np.allclose(got, [idf * 2 * 2.5 / (2 + norm[0]), 0.0, idf * 1 * 2.5 / (1 + norm[2])])
    assert np.allclose(coverage(tf, [0, 1]), [0.5, 0.5, 1.0])


def _repo() -> RepoChunks:
    files = {
        "pkg/ledger.py": ["import os", "", "def reserve_funds(amount):", "    return amount", "",
                          "def settle(amount):", "    return -amount"],
        "tests/test_ledger.py": ["def test_reserve():", "    assert reserve_funds(1) == 1"],
        "pkg/util.py": ["def helper():", "    return reserve_funds(2)"],
    }
    syms = {"pkg/ledger.py": [(3, 4, "reserve_funds", "function"), (6, 7, "settle", "function")],
            "tests/test_ledger.py": [(1, 2, "test_reserve", "function")],
            "pkg/util.py": [(1, 2, "helper", "function")]}
    return RepoChunks(sorted(files), files, syms)


def test_feature_matrix_names_every_feature_once_and_describes_the_chunks() -> None:
    rc = _repo()
    assert len(FEATURES) == len(set(FEATURES)) == sum(len(v) for v in GROUPS.values())
    view = EngineView({"pkg/ledger.py": 1.0, "pkg/util.py": 0.2}, {"pkg/ledger.py": 0, "pkg/util.py": 1},
                      {"pkg/ledger.py": {"pagerank": 0.5}})
    cf = chunk_features(rc, "reserve_funds breaks when the amount is negative", view)
    assert cf.X.shape == (len(cf.spans), len(FEATURES))
    row = {(s.path, s.start): cf.X[i] for i, s in enumerate(cf.spans)}
    col = FEATURES.index
    target = row[("pkg/ledger.py", 3)]
    assert target[col("exact_name")] == 1.0 and target[col("name_match")] > 0
    assert target[col("chunk_bm25_rel")] == 1.0  # the definition named by the goal scores best
    assert target[col("eng_pagerank")] == 0.5 and target[col("eng_rank")] == 0.0
    assert row[("tests/test_ledger.py", 1)][col("is_test")] == 1.0
    assert row[("pkg/util.py", 1)][col("calls_top")] > 0  # calls the best lexical chunk's definition
    assert target[col("goal_ident")] == 1.0 and target[col("goal_error")] == 0.0
    assert all(target[col(h)] == 0.0 for h in HISTORY_FEATURES)  # no history given


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(root), "PATH": "/usr/bin:/bin"})


def _history_repo(root: Path) -> Path:
    root.mkdir()
    _git(root, "init", "-q")
    for i, (path, msg) in enumerate([("a.py", "start"), ("b.py", "timeout handling for sockets"),
                                     ("a.py", "docs"), ("b.py", "socket timeout retry")]):
        (root / path).write_text(f"x = {i}\n")
        if path == "b.py":
            (root / "c.py").write_text(f"y = {i}\n")  # c changes with b
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", msg)
    return root


def test_history_points_at_files_whose_past_commits_resemble_the_goal(tmp_path: Path) -> None:
    root = _history_repo(tmp_path / "r")
    hist = load_history(root / ".git", "HEAD")
    assert isinstance(hist, History) and hist.n == 4
    f = hist.features(["a.py", "b.py", "c.py", "new.py"], tokenize("socket timeout"), seeds=["b.py"])
    assert f["hist_msg"][1] == 1.0 and f["hist_msg"][0] == 0.0 and f["hist_msg"][3] == 0.0
    assert np.allclose(f["hist_churn"][:3], np.log1p([2, 2, 2]))
    assert f["hist_recency"][1] == 1.0 and f["hist_recency"][0] < 1.0
    assert f["hist_cochange"][2] == 1.0 and f["hist_cochange"][0] == 0.0
    # history up to an earlier revision knows nothing after it
    early = load_history(root / ".git", "HEAD~2")
    assert early is not None and early.n == 2
    assert load_history(tmp_path / "nothing", "HEAD") is None
    assert repo_history(tmp_path) is None  # no .git: no history


_LEDGER = ("import os\n\n\ndef reserve_funds(amount):\n    total = amount\n    return total\n\n\n"
           "def settle(amount):\n    return -amount\n\n\nclass Book:\n    def close(self):\n        return 0\n")


def test_line_history_points_at_the_definitions_similar_past_commits_changed(tmp_path: Path) -> None:
    """The hunks of the past commits whose messages resemble the goal: their lines, the definitions they name
    (git's function-name driver names a method, not only its class) and the terms they changed."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    _git(root, "init", "-q")
    (root / "pkg" / "ledger.py").write_text(_LEDGER)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "ledger")
    (root / "pkg" / "ledger.py").write_text(_LEDGER.replace("total = amount", "total = round(amount, 2)")
                                            .replace("return 0", "return 1"))
    _git(root, "commit", "-qam", "rounding of reserved funds")
    hist = load_history(root / ".git", "HEAD")
    assert hist is not None and hist.diffs is not None and len(hist.shas[0]) == 40
    shown = hist.diffs(hist.shas[:1])
    (diff,) = shown.values()
    fd = diff["pkg/ledger.py"]
    assert fd.ranges == [(5, 5), (15, 15)]
    assert {"reserve_funds", "close", "round", "total"} <= fd.names  # "close": the python driver's hunk header
    assert {"round", "total", "amount"} <= fd.terms
    engine = RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)
    rc = repo_chunks(engine)
    goal = "rounding of reserved funds"
    hist = repo_history(root)
    cf = chunk_features(rc, goal, engine_view(engine, goal), hist, line_history=True)
    by_name = {s.name: cf.X[i] for i, s in enumerate(cf.spans)}
    col = {k: FEATURES.index(k) for k in LINE_FEATURES}
    assert by_name["reserve_funds"][col["hist_span"]] == 1.0 and by_name["settle"][col["hist_span"]] == 0.0
    assert by_name["reserve_funds"][col["hist_name"]] == 1.0 and by_name["settle"][col["hist_name"]] == 0.0
    assert by_name["reserve_funds"][col["hist_code"]] > by_name["settle"][col["hist_code"]] >= 0.0
    # a snapshot carries the log and every commit's condensed diff: the same features as the checkout
    carried = history_from_log(history_text(root / ".git", "HEAD"))
    assert carried is not None and carried.diffs is not None
    snap = chunk_features(rc, goal, engine_view(engine, goal), carried, line_history=True)
    assert np.array_equal(snap.X, cf.X)
    # without line_history, or from a bare log (no diffs), the group is zero
    off = chunk_features(rc, goal, engine_view(engine, goal), hist)
    bare = history_from_log(run_log(root / ".git", "HEAD"))
    assert bare is not None and bare.n == 2 and bare.diffs is None
    on_bare = chunk_features(rc, goal, engine_view(engine, goal), bare, line_history=True)
    for got in (off, on_bare):
        assert not got.X[:, [col[k] for k in LINE_FEATURES]].any()


def test_a_past_hunk_is_carried_to_the_revisions_line_numbers() -> None:
    """A range a commit changed, moved by the newer commits' insertions and replacements (``-U0`` hunks)."""
    insert = FileDiff()
    insert.hunks = [(3, 0, 4, 2)]  # two lines inserted after line 3
    replace = FileDiff()
    replace.hunks = [(10, 2, 10, 1), (20, 1, 19, 0)]  # lines 10-11 become one; line 20 removed
    assert carry_forward(1, 3, [insert]) == (1, 3)
    assert carry_forward(4, 5, [insert]) == (6, 7)
    assert carry_forward(8, 11, [insert, replace]) == (10, 12)  # 8-11 -> 10-13; 10-11 became 10, 13 -> 12
    assert carry_forward(12, 30, [replace]) == (11, 28)
    assert carry_forward(20, 20, [replace]) == (19, 19)  # a removed line: where the removal was


def test_recent_activity_points_at_the_definitions_the_newest_commits_changed(tmp_path: Path) -> None:
    """Whatever the goal: the newest commits' hunks, carried forward to HEAD's lines, and their files."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    _git(root, "init", "-q")
    (root / "pkg" / "ledger.py").write_text(_LEDGER)
    (root / "pkg" / "other.py").write_text("def untouched():\n    return 2\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "ledger")
    ledger = _LEDGER.replace("return -amount", "return -abs(amount)")
    (root / "pkg" / "ledger.py").write_text(ledger)
    _git(root, "commit", "-qam", "settle takes the absolute amount")
    # the newest commit inserts lines above settle: its older hunk is carried down to where settle is now
    (root / "pkg" / "ledger.py").write_text(ledger.replace("import os\n", "import os\nimport sys\nimport re\n"))
    _git(root, "commit", "-qam", "imports")
    engine = RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)
    rc = repo_chunks(engine)
    goal = "settle reserve_funds untouched"  # each a candidate
    hist = repo_history(root)
    cf = chunk_features(rc, goal, engine_view(engine, goal), hist, recent=True, top_files=10)
    by_name = {s.name: cf.X[i] for i, s in enumerate(cf.spans)}
    span, file = FEATURES.index("hist_recent_span"), FEATURES.index("hist_recent_file")
    newest, older, first = 1.0, 1.0 / (1.0 + 1 / 5), 1.0 / (1.0 + 2 / 5)  # commit i weighs 1 / (1 + i / 5)
    # settle: changed one commit before the newest, at a line the newest moved down by two (not carried,
    # that hunk would sit on the blank line above it); the first commit added every line
    assert by_name["settle"][span] == pytest.approx(older + first)
    assert by_name["reserve_funds"][span] == pytest.approx(first)
    assert by_name["settle"][file] == pytest.approx(newest + older + first)
    assert by_name["untouched"][span] == pytest.approx(first) and by_name["untouched"][file] == pytest.approx(first)
    # a snapshot carries the newest commits' condensed diffs: the same features as the checkout
    carried = history_from_log(history_text(root / ".git", "HEAD", diffs=RECENT_COMMITS))
    snap = chunk_features(rc, goal, engine_view(engine, goal), carried, recent=True, top_files=10)
    assert np.array_equal(snap.X, cf.X)
    # not asked for, from a bare log, or without history: zero
    bare = history_from_log(run_log(root / ".git", "HEAD"))
    for got in (chunk_features(rc, goal, engine_view(engine, goal), hist, top_files=10),
                chunk_features(rc, goal, engine_view(engine, goal), bare, recent=True, top_files=10),
                chunk_features(rc, goal, engine_view(engine, goal), None, recent=True, top_files=10)):
        assert not got.X[:, [span, file]].any()


def test_condensed_diffs_read_back_to_what_git_showed(tmp_path: Path) -> None:
    """``condense_diffs`` keeps each commit's ranges, hunk-header names and words, in a fraction of the text."""
    root = _history_repo(tmp_path / "r")
    (root / "b.py").write_text("def parseHeader(raw):\n    return raw.split(':')\n")
    _git(root, "commit", "-qam", "header parsing")
    got = log_diffs(root / ".git", "HEAD")
    assert len(got) == 5
    back = parse_diffs(condense_diffs(got))
    assert set(back) == set(got)
    for sha, files in got.items():
        assert set(back[sha]) == set(files)
        for path, fd in files.items():
            again = back[sha][path]
            assert (again.ranges, again.hunks, again.names, again.terms) == (fd.ranges, fd.hunks, fd.names, fd.terms)
    assert {"parseHeader", "raw", "split"} <= next(iter(got.values()))["b.py"].names


def test_line_history_reads_a_bounded_diff(tmp_path: Path) -> None:
    """A commit that rewrote a file past the per-file cap is read up to the cap; a deleted file is left out."""
    text = "\x1eabc\ndiff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,0 +1,500 @@\n" + \
        "".join(f"+v{i} = {i}\n" for i in range(500)) + \
        "diff --git a/gone.py b/gone.py\n--- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-old_name = 1\n"
    got = parse_diffs(text)["abc"]
    # an added line "++ x" reads "+++ x": content, not the next file's header
    odd = parse_diffs("\x1eabc\ndiff --git a/y.c b/y.c\n--- a/y.c\n+++ b/y.c\n@@ -3 +3,2 @@ int main\n+++ counter;\n"
                      "+--- done\n")["abc"]
    assert set(odd) == {"y.c"} and odd["y.c"].words == {"counter", "done"} and odd["y.c"].n_lines == 2
    assert parse_diffs(io.StringIO(text, newline="\n"))["abc"]["x.py"].words == got["x.py"].words  # a stream
    assert set(got) == {"x.py"} and got["x.py"].n_lines == 400 and got["x.py"].ranges == [(1, 500)]
    assert "v399" in got["x.py"].names and "v400" not in got["x.py"].names


def test_features_from_a_real_engine_rank_the_named_definition_first(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "ledger.py").write_text("def reserve_funds(amount):\n    return amount\n\n\n"
                                            "def settle(amount):\n    return -amount\n")
    (root / "pkg" / "other.py").write_text("def unrelated():\n    return 0\n")
    engine = RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)
    rc = repo_chunks(engine)
    assert repo_chunks(engine) is rc  # built once per index version
    cf = chunk_features(rc, "reserve_funds rounding", engine_view(engine, "reserve_funds rounding"))
    best = cf.spans[int(np.argmax(cf.X[:, FEATURES.index("chunk_bm25")]))]
    assert (best.path, best.start, best.name) == ("pkg/ledger.py", 1, "reserve_funds")
    assert cf.X[[i for i, s in enumerate(cf.spans) if s.path == "pkg/ledger.py"][0], FEATURES.index("eng_score")] > 0


def _same_chunks(a: RepoChunks, b: RepoChunks) -> None:
    assert (a.files, a.spans, a.vocab, a.name_vocab) == (b.files, b.spans, b.vocab, b.name_vocab)
    for name in ("file_of", "starts", "ends", "file_lines", "chunk_df", "file_df"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in ("tf", "file_tf", "name_tf"):
        assert (getattr(a, name) != getattr(b, name)).nnz == 0, name


def test_each_chunk_counts_its_path_and_text_terms_in_first_seen_columns() -> None:
    """The term bags are ``Counter(tokenize(path) + tokenize(text))`` and columns are numbered in the
    order terms are first seen (the counting per distinct word must give what counting per token did)."""
    files = {"pkg/user_store.py": ["def get_user(user_id):", "    user = load(user_id)  # getUser getUser",
                                   "    return user", "", "x = get_user(1) + get_user(2)"]}
    rc = RepoChunks(["pkg/user_store.py"], files, {"pkg/user_store.py": [(1, 3, "get_user", "function")]})
    seen: dict[str, int] = {}
    for span, row in zip(rc.spans, rc.tf.toarray(), strict=True):
        terms = tokenize(span.path) + tokenize("\n".join(files[span.path][span.start - 1:span.end]))
        for t in terms:
            seen.setdefault(t, len(seen))
        assert {t: int(row[rc.vocab[t]]) for t in set(terms)} == Counter(terms)
        assert row.sum() == len(terms)
    assert rc.vocab == seen


def test_stored_chunks_read_back_equal_and_another_layout_is_refused() -> None:
    rc = _repo()
    back = RepoChunks.from_bytes(rc.to_bytes())
    _same_chunks(rc, back)
    goal = tokenize("reserve funds settle helper")
    weight = {t: 1.0 + i for i, t in enumerate(goal)}
    assert np.array_equal(name_match(back, goal, weight), name_match(rc, goal, weight))
    # the name share is each chunk's name terms against the goal's, weighted (what tokenising every name gave)
    want = [sum(weight[t] for t in set(tokenize(s.name)) & set(goal)) / sum(weight[t] for t in set(goal))
            for s in rc.spans]
    assert np.allclose(name_match(rc, goal, weight), want)
    for bad in (b"", b"not marshal", rc.to_bytes().replace(STORE_FORMAT.encode(), b"repochunks-0-80-40")):
        with pytest.raises(ValueError):
            RepoChunks.from_bytes(bad)


def test_a_new_engine_process_reads_the_chunks_its_index_version_stored(tmp_path: Path) -> None:
    """A warm open (a new worker, a new CLI command) reads the stored chunks: 40 s of a 20,000-file repository."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "ledger.py").write_text("def reserve_funds(amount):\n    return amount\n")
    built = repo_chunks(RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1))
    fromengine._CACHE.clear()  # what a new process starts with
    engine = RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)
    read_lines = engine.read_lines
    engine.read_lines = lambda *a: pytest.fail("read the files again instead of the stored chunks")  # type: ignore
    _same_chunks(repo_chunks(engine), built)
    engine.read_lines = read_lines  # type: ignore[method-assign]
    # a changed file is another index version: its chunks are built again, not read stale
    (root / "pkg" / "ledger.py").write_text("def settle(amount):\n    return -amount\n")
    fromengine._CACHE.clear()
    again = repo_chunks(RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1))
    assert [s.name for s in again.spans] == ["settle"]


def test_line_history_skips_what_git_cannot_show_and_never_fetches_from_a_partial_clone(tmp_path: Path) -> None:
    """A commit whose blob is missing is left out, the others are read; a partial clone reads no diff at all
    (each old blob would be fetched over the network)."""
    root = _history_repo(tmp_path / "r")
    hist = load_history(root / ".git", "HEAD")
    assert hist is not None and hist.diffs is not None
    before = hist.diffs(hist.shas)
    assert len(before) == 4
    # drop the blob the newest commit wrote for b.py (loose objects: a fresh repository is unpacked)
    blob = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD:b.py"], capture_output=True, text=True,
                          check=True).stdout.strip()
    (root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    got = show_diffs(root / ".git", hist.shas)
    assert set(got) == set(hist.shas[1:])  # the newest commit cannot be shown; the three others are
    source = tmp_path / "src"
    _git(tmp_path, "clone", "-q", str(_history_repo(source)), str(tmp_path / "full"))
    _git(source, "config", "uploadpack.allowFilter", "true")
    _git(tmp_path, "clone", "-q", "--no-checkout", "--filter=blob:none", f"file://{source}", str(tmp_path / "partial"))
    partial = load_history(tmp_path / "partial" / ".git", "HEAD")
    assert partial is not None and partial.n == 4 and partial.diffs is None
    assert history_text(tmp_path / "partial" / ".git", "HEAD") == run_log(tmp_path / "partial" / ".git", "HEAD")


def test_bm25_and_coverage_take_a_given_idf_per_column() -> None:
    tf = sp.csr_matrix(np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    own = bm25_scores(tf, [0])
    assert np.allclose(bm25_scores(tf, [0], np.array([2.0])), own / math.log(1 + 1.5 / 2.5) * 2.0)
    # a term common in the corpus weighs less in the share though this repository rarely says it
    assert np.allclose(coverage(tf, [0, 1], np.array([3.0, 1.0])), [0.75, 0.25, 1.0])


def test_corpus_idf_table_round_trips_byte_for_byte_and_unknown_terms_get_the_highest_idf(tmp_path: Path) -> None:
    from durable_navigator.repomap.chunkrank.corpusidf import idf_of_share, read_table, write_table

    shares = {"return": 0.6, "reserve": 0.001}
    a, b = tmp_path / "a.tsv.gz", tmp_path / "b.tsv.gz"
    write_table(a, shares, {"return": 0.9, "reserve": 0.01}, 1e-4, {"repos": 2})
    write_table(b, shares, {"return": 0.9, "reserve": 0.01}, 1e-4, {"repos": 2})
    assert a.read_bytes() == b.read_bytes()  # no time stamp nor file name in the gzip header
    table = read_table(a.read_bytes())
    assert table.meta["repos"] == 2 and table.meta["version"] == "corpus-idf-v1"
    got = table.chunk_idf(["return", "reserve", "never_seen"])
    assert got[0] < got[1] < got[2] == table.default
    assert np.isclose(got[1], idf_of_share(np.array([0.001]), 1e-4)[0], atol=1e-3)
    assert table.file_idf(["return"])[0] < table.chunk_idf(["return"])[0]


def test_the_shipped_corpus_idf_loads_offline_and_knows_code_from_goal_words() -> None:
    from durable_navigator.repomap.chunkrank.corpusidf import load_corpus_idf

    table = load_corpus_idf()
    assert table.meta["repos"] >= 60 and len(table.chunk) > 10_000
    common, specific = table.chunk_idf(["return", "reserve"])
    assert common < 2.0 < specific


def test_corpus_features_score_the_goal_with_the_corpus_idf_and_can_be_left_out() -> None:
    rc = _repo()
    view = EngineView({"pkg/ledger.py": 1.0}, {"pkg/ledger.py": 0}, {})
    goal = "reserve_funds breaks when the amount is negative"
    cf = chunk_features(rc, goal, view, corpus=True)
    col = FEATURES.index
    row = {(s.path, s.start): cf.X[i] for i, s in enumerate(cf.spans)}
    target = row[("pkg/ledger.py", 3)]
    assert target[col("chunk_bm25_c_rel")] == 1.0 and target[col("file_bm25_c")] > 0
    assert 0 < target[col("chunk_cover_c")] <= 1 and target[col("goal_cidf")] > 0
    off = chunk_features(rc, goal, view)
    assert all(off.X[:, col(c)].max() == 0 for c in GROUPS["corpus"])
    others = [col(c) for c in FEATURES if c not in GROUPS["corpus"]]
    assert np.array_equal(off.X[:, others], cf.X[:, others])


def test_feedback_scores_code_that_shares_the_best_chunks_terms_but_not_the_goals() -> None:
    files = {
        "limit.py": ["def rate_limit(req):", "    return throttle_window(req, bucket_tokens)"],
        "window.py": ["def throttle_window(req, bucket_tokens):", "    return bucket_tokens - req.cost"],
        "other.py": ["def render_page(html):", "    return html.strip()"],
    }
    syms = {"limit.py": [(1, 2, "rate_limit", "function")], "window.py": [(1, 2, "throttle_window", "function")],
            "other.py": [(1, 2, "render_page", "function")]}
    rc = RepoChunks(sorted(files), files, syms)
    view = EngineView({"limit.py": 1.0, "window.py": 0.5, "other.py": 0.2}, {"limit.py": 0, "window.py": 1, "other.py": 2},
                      {})
    cf = chunk_features(rc, "rate limit is ignored", view, top_files=3, feedback=True)
    col = FEATURES.index
    row = {s.path: cf.X[i] for i, s in enumerate(cf.spans)}
    assert row["window.py"][col("chunk_bm25")] == 0  # says no goal term
    assert row["window.py"][col("chunk_prf")] > 0 and row["window.py"][col("file_prf_rel")] > 0
    # ``other.py`` shares only the path term ``py`` with the best chunk
    assert row["window.py"][col("chunk_prf")] > 5 * row["other.py"][col("chunk_prf")]
    none = chunk_features(rc, "nothing here matches", view, top_files=3, feedback=True)
    off = chunk_features(rc, "rate limit is ignored", view, top_files=3)
    assert all(m.X[:, col(c)].max() == 0 for c in GROUPS["feedback"] for m in (none, off))


def test_goal_assoc_table_round_trips_byte_for_byte_and_a_goal_never_votes_for_its_own_words(tmp_path: Path) -> None:
    from durable_navigator.repomap.chunkrank.assoc import read_assoc, write_assoc

    table = {"timeout": [("deadline", 3.7), ("timer", 2.0)], "stdout": [("isatty", 3.5), ("timer", 1.0)]}
    a, b = tmp_path / "a.tsv.gz", tmp_path / "b.tsv.gz"
    write_assoc(a, table, {"tasks": 10})
    write_assoc(b, table, {"tasks": 10})
    assert a.read_bytes() == b.read_bytes()  # no time stamp nor file name in the gzip header
    got = read_assoc(a.read_bytes())
    assert got.meta == {"tasks": 10, "version": "goal-assoc-v1"}
    assert got.pairs["timeout"] == (("deadline", 3.7), ("timer", 2.0))
    # both goal words vote for ``timer``; ``isatty`` is dropped because the goal says it
    assert got.expansion(["timeout", "stdout", "isatty", "timeout"]) == {"deadline": 3.7, "timer": 3.0}
    assert got.expansion(["unknown"]) == {}


def test_the_shipped_goal_assoc_loads_offline_and_links_goal_words_to_code_words() -> None:
    from durable_navigator.repomap.chunkrank.assoc import load_assoc

    table = load_assoc()
    assert table.meta["repos"] >= 60 and table.meta["tasks"] >= 5_000 and len(table.pairs) > 1_000
    assert "deadline" in dict(table.pairs["timeout"]) and "isatty" in dict(table.pairs["stdout"])
    assert "fix" not in table.pairs  # a word every kind of change says goes with nothing in particular


def test_assoc_features_score_code_in_the_words_the_goal_goes_with_and_can_be_left_out(monkeypatch) -> None:
    from durable_navigator.repomap.chunkrank import features as feats
    from durable_navigator.repomap.chunkrank.assoc import GoalAssoc

    monkeypatch.setattr(feats, "load_assoc", lambda: GoalAssoc({"timeout": (("deadline", 3.0), ("timer", 1.0))}, {}))
    files = {
        "net.py": ["def wait(sock, deadline):", "    return sock.recv(deadline)"],
        "clock.py": ["def start_timer(ms):", "    return ms"],
        "page.py": ["def render_page(html):", "    return html.strip()"],
    }
    syms = {p: [(1, 2, files[p][0][4:files[p][0].index("(")], "function")] for p in files}
    rc = RepoChunks(sorted(files), files, syms)
    view = EngineView({p: 1.0 for p in files}, {p: i for i, p in enumerate(sorted(files))}, {})
    cf = chunk_features(rc, "requests hang without a timeout", view, top_files=3, assoc=True)
    col = FEATURES.index
    row = {s.path: cf.X[i] for i, s in enumerate(cf.spans)}
    assert row["net.py"][col("chunk_bm25")] == 0  # says no goal word
    assert row["net.py"][col("chunk_assoc_rel")] == 1.0 and row["net.py"][col("file_assoc")] > 0
    assert 0 < row["clock.py"][col("chunk_assoc")] < row["net.py"][col("chunk_assoc")]  # a weaker link
    assert row["page.py"][col("chunk_assoc")] == 0
    off = chunk_features(rc, "requests hang without a timeout", view, top_files=3)
    none = chunk_features(rc, "nothing here matches", view, top_files=3, assoc=True)
    assert all(m.X[:, col(c)].max() == 0 for c in GROUPS["assoc"] for m in (off, none))
    others = [col(c) for c in FEATURES if c not in GROUPS["assoc"]]
    assert np.array_equal(off.X[:, others], cf.X[:, others])
