"""Checks of the quality benchmark's own rules (not collected by the project's ``pytest``; run with
``.venv/bin/pytest bench/test_quality_bench.py``): map parsing and the visibility rule, chunking,
goal redaction."""

from __future__ import annotations

# pytest's default import mode puts bench/ (no __init__.py) on sys.path for this file
from quality_baselines import Doc, chunk_ranges, tokenize
from quality_score import map_section, parse_context, score_context
from taskset import redact_goal

SRC = {
    "pkg/mod.py": [
        "import os",                      # 1
        "",                               # 2
        "@decorate",                      # 3
        "def build(",                     # 4
        '    name: str = "x",',           # 5
        "    size: int = 1,",             # 6
        ") -> int:",                      # 7
        '    """Build it."""',            # 8
        "    return size",                # 9
        "",                               # 10
        "def other():",                   # 11
        "    return None",                # 12
    ],
    "README.md": ["# title", "```", "code", "```", "end"],
}


def source(path: str) -> list[str]:
    return SRC.get(path, [])


MAP = "\n".join([
    '# repo-map {"budget":100}',
    "README.md [L4 40B 5L] why=bm25:title",
    "```",
    *SRC["README.md"],
    "```",
    "pkg/mod.py [L3 1.0K 12L] why=focus",
    "  3: @decorate def build(name: str='x', size: int=1) -> int:",
    "    | Build it.",
    "  11: def other():",
    "```",
    *SRC["pkg/mod.py"][10:12],
    "```",
    "other.py [L1 10B 1L]",
    "",
])


def test_l4_block_with_an_inner_fence_is_aligned_by_position() -> None:
    parsed = parse_context(MAP, source)
    assert parsed.unparsed == 0
    assert parsed.files["README.md"].verbatim == {1, 2, 3, 4, 5}


def test_outline_signature_continuation_doc_and_expansion() -> None:
    f = parse_context(MAP, source).files["pkg/mod.py"]
    assert f.signature >= {3, 4, 5, 6, 7, 11}
    assert f.doc == {8}
    assert f.verbatim == {11, 12}
    assert 9 not in f.visible and 1 not in f.visible


def test_scores_listed_vs_shown_files() -> None:
    parsed = parse_context(MAP, source)
    s = score_context(parsed, {"pkg/mod.py": [5, 9], "other.py": [1]}, source)
    assert s["line_recall"] == 1 / 3
    assert s["file_hit"] == 1.0 and s["all_files"] == 0.0 and s["file_hit_listed"] == 1.0


def test_baseline_blocks_and_context_md() -> None:
    text = Doc("pkg/mod.py", 11, 12).render(SRC["pkg/mod.py"])
    parsed = parse_context(text, source)
    assert parsed.files["pkg/mod.py"].verbatim == {11, 12}
    md = "# Context: g\n\n## Summary\n\nx\n\n## Repository map\n\n" + MAP
    assert map_section(md) == MAP


def test_chunks_cover_every_non_blank_line_once() -> None:
    src = [f"line {i}" if i % 7 else "" for i in range(1, 401)]
    symbols = [(10, 300), (20, 60), (70, 290), (80, 85), (305, 310)]
    chunks = chunk_ranges(len(src), symbols, src)
    seen = [0] * (len(src) + 1)
    for a, b in chunks:
        for k in range(a, b + 1):
            seen[k] += 1
    assert all(seen[k] == 1 for k in range(1, 401) if src[k - 1])
    assert (20, 60) in chunks and (305, 310) in chunks


def test_tokenize_splits_identifiers_and_drops_stopwords() -> None:
    assert tokenize("Why does parseHeader fail for max_count?") == [
        "parseheader", "parse", "header", "fail", "max_count", "max", "count"]


def test_redaction_of_paths_modules_and_scopes() -> None:
    changed = ["crates/printer/src/json.rs", "lib/rack/utils.rb", "src/attr/_make.py"]
    goal = redact_goal("printer: fix json.rs and rack/utils, see attr._make and `src/attr/_make.py`",
                       changed, extended=True)
    assert goal == "fix and , see and"
    assert redact_goal("fix(middleware): x y", ["middleware/compress.go"], extended=True) == "fix: x y"
    assert redact_goal("docs: x", ["middleware/compress.go"], extended=True) == "docs: x"


def test_training_rows_are_written_whole_or_not_at_all(tmp_path, monkeypatch) -> None:
    """A row builder killed mid-write left no file ``is_cached`` would take for finished rows."""
    import numpy as np
    import pytest

    import ranker_data

    out = tmp_path / "feat" / "task.h.npz"
    ranker_data.save_rows(out, X=np.ones((2, 3), dtype=np.float32), meta="{}")
    assert np.load(out)["X"].shape == (2, 3) and [p.name for p in out.parent.iterdir()] == ["task.h.npz"]

    def dies(fh, **arrays):  # the process stopped after part of the file was written
        fh.write(b"PK\x03\x04 half a zip")
        raise KeyboardInterrupt

    other = tmp_path / "feat" / "other.h.npz"
    monkeypatch.setattr(np, "savez", dies)
    with pytest.raises(KeyboardInterrupt):
        ranker_data.save_rows(other, X=np.ones(1))
    assert not other.exists() and sorted(p.name for p in out.parent.iterdir()) == ["task.h.npz"]


def test_spend_splits_the_maps_tokens_by_kind_of_shown_file() -> None:
    """``quality_gaps.spend``: whole files, expanded files and bare listings, gold or not, with the
    share of the changed lines each kind shows."""
    from quality_gaps import spend

    parsed = parse_context(MAP, source)
    got = spend(MAP, parsed, {"pkg/mod.py": [11, 12, 4, 9]})
    assert got["whole_other_tokens"] > 0 and got["whole_gold_tokens"] == 0  # README.md: no changed line
    assert got["expanded_gold_tokens"] > 0 and got["expanded_gold_recall"] == 0.5  # 11-12 shown, 4 and 9 not
    assert got["listed_tokens"] > 0 and got["listed_recall"] == 0  # other.py: a path line only
    assert got["whole_other_recall"] == 0 and got["expanded_other_tokens"] == 0


def test_train_ranker_bags_seeds_and_copies_tasks_without_history(tmp_path) -> None:
    """``--bag K``: K boosters on consecutive seeds, one file the package's ranker loads and averages;
    ``--no-history-copies``: a task as a checkout without ``.git`` sees it (history groups zero)."""
    import numpy as np

    import train_ranker
    from durable_navigator.repomap.chunkrank.features import FEATURES, GROUPS
    from durable_navigator.repomap.chunkrank.model import ChunkRanker, load_ranker

    rng = np.random.default_rng(3)
    rows = []
    for i in range(12):
        X = rng.random((30, len(FEATURES))).astype(np.float32)
        rows.append({"X": X, "label": (X[:, FEATURES.index("chunk_bm25_rel")] > 0.7).astype(np.int64) * 3,
                     "repo": f"r{i % 3}"})
    hist = [FEATURES.index(f) for g in ("history", "history_line", "history_recent") for f in GROUPS[g]]
    bare = train_ranker.without_history(rows[0])
    assert not bare["X"][:, hist].any() and rows[0]["X"][:, hist].any() and bare["repo"] == "r0"
    keep = [c for c in range(len(FEATURES)) if c not in hist]
    assert np.array_equal(bare["X"][:, keep], rows[0]["X"][:, keep])
    cols = list(range(len(FEATURES)))
    bag = train_ranker.fit(rows, cols, seed=7, trees=5, leaves=4, candidates=30, bag=2)
    assert isinstance(bag, train_ranker.Bag) and len(bag.boosters) == 2 and bag.num_trees() == 5
    ranker = ChunkRanker(bag.model_to_string(), list(FEATURES), load_ranker().calibration, "ranker-v97", 0.5)
    assert np.allclose(ranker.score(rows[1]["X"]), bag.predict(rows[1]["X"]))



def test_train_ranker_calibrates_relative_to_the_goals_best_few_and_the_package_reads_it_so(tmp_path) -> None:
    """``--anchor K``: the calibration is fitted on scores relative to the mean of each goal's K best,
    written into the model's ``.json``, and the loaded ranker values chunks the same way."""
    import json

    import numpy as np

    import train_ranker
    from durable_navigator.repomap.chunkrank.features import FEATURES
    from durable_navigator.repomap.chunkrank.model import anchored, chunk_lines, ranker_from_files

    rng = np.random.default_rng(4)
    rows = []
    for i in range(12):
        X = rng.random((30, len(FEATURES))).astype(np.float32)
        X[:, FEATURES.index("n_lines")] = np.log1p(rng.integers(1, 60, 30))
        label = (X[:, FEATURES.index("chunk_bm25_rel")] > 0.7).astype(np.int64) * 3
        rows.append({"X": X, "label": label, "first": label > 0, "n_gold": int(label.sum()) or 1, "repo": f"r{i % 3}"})
    cols = list(range(len(FEATURES)))
    oof = train_ranker.out_of_fold(rows, cols, seed=7, trees=5, leaves=4, candidates=30)
    one, eight = (train_ranker.calibrate(rows, oof, min_points=0, anchor=k) for k in (1, 8))
    assert (one.anchor, eight.anchor) == (1, 8) and max(max(t) for t in one.rel if t) <= 0 < max(max(t) for t in eight.rel if t)
    booster = train_ranker.fit(rows, cols, seed=7, trees=5, leaves=4, candidates=30)
    train_ranker.save(booster, cols, eight, tmp_path, {"trees": 5}, 0.75, "ranker-v95")
    meta = json.loads((tmp_path / "ranker-v95.json").read_text())
    assert meta["calibration"]["anchor"] == 8 and meta["cost_power"] == 0.75
    ranker = ranker_from_files(meta, (tmp_path / "ranker-v95.txt").read_text())
    X = rows[1]["X"]
    s, full, _sig = ranker.values(X)
    assert np.allclose(s, booster.predict(X))
    want = np.zeros(len(s))
    bucket = np.searchsorted(np.asarray((8, 20, 50)), chunk_lines(X), side="left")
    for b in range(4):
        m = bucket == b
        if m.any() and eight.rel[b]:
            want[m] = np.interp(anchored(s, 8)[m], eight.rel[b], eight.full[b])
    assert np.allclose(full, want)
