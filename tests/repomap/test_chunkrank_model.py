"""The shipped chunk-ranker model loads offline from the package and prices chunks sensibly."""

from __future__ import annotations

import json
import subprocess
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from durable_navigator.repomap.chunkrank.features import FEATURES, GROUPS
from durable_navigator.repomap.chunkrank.model import HISTORY_MODEL_VERSION, MODEL_VERSION, Calibration, load_ranker

if TYPE_CHECKING:
    from durable_navigator.repomap.chunkrank.history import History


def test_the_shipped_model_loads_from_package_data_and_reads_only_known_features() -> None:
    here = resources.files("durable_navigator.repomap.chunkrank")
    meta = json.loads(here.joinpath(f"{MODEL_VERSION}.json").read_text())
    assert meta["version"] == MODEL_VERSION and set(meta["features"]) <= set(FEATURES)
    assert meta["trained"]["train_split"] != "test" and meta["trained"]["calib_split"] != "test"
    ranker = load_ranker()
    assert ranker.booster.num_trees() == meta["trained"]["trees"]
    assert 0.0 <= ranker.cost_power <= 1.0


def _weak_and_strong() -> tuple[np.ndarray, np.ndarray]:
    """Two feature rows of the same 20-line chunk: unrelated to the goal, and matching it everywhere."""
    col = FEATURES.index
    weak = np.zeros(len(FEATURES), dtype=np.float32)
    weak[col("n_lines")] = np.log1p(20)
    weak[col("file_lines")] = np.log1p(300)
    weak[col("chunk_bm25_rank")] = np.log1p(250)
    weak[col("eng_rank")] = np.log1p(80)
    strong = weak.copy()
    for name, v in (("chunk_bm25", 12.0), ("chunk_bm25_rel", 1.0), ("chunk_bm25_rank", 0.0), ("chunk_cover", 0.9),
                    ("file_bm25", 20.0), ("file_bm25_rel", 1.0), ("file_cover", 1.0), ("name_match", 0.6),
                    ("exact_name", 1.0), ("eng_score", 1.0), ("eng_rank", 0.0), ("eng_bm25", 1.0)):
        strong[col(name)] = v
    return weak, strong


def test_the_model_prefers_a_chunk_that_matches_the_goal_and_values_follow_scores() -> None:
    ranker = load_ranker()
    weak, strong = _weak_and_strong()
    scores, full, sig = ranker.values(np.vstack([weak, strong]))
    assert scores[1] > scores[0]
    assert full[1] > full[0] >= 0.0 and (sig >= 0).all()


def test_calibration_is_monotone_per_size_bucket() -> None:
    rng = np.random.default_rng(0)
    rel = -rng.random(4000) * 5
    lines = rng.integers(1, 200, 4000).astype(float)
    share = np.clip(1.0 + rel / 5 + rng.normal(0, 0.2, 4000), 0, None) * (lines / 200)
    cal = Calibration.fit(rel, lines, share, share * 0.1)
    for table in cal.full:
        assert list(table) == sorted(table)
    full, _ = cal.values(np.array([0.0, -1.0, -4.0]), np.array([100.0, 100.0, 100.0]))
    assert full[0] >= full[1] >= full[2]


def _trained_on_corpus_train(version: str, expected: str) -> tuple[dict, dict]:
    """A shipped model's ``.json`` and its ``trained`` record: the version named, known features only,
    trained on the corpus' train split with an out-of-fold calibration."""
    here = resources.files("durable_navigator.repomap.chunkrank")
    meta = json.loads(here.joinpath(f"{version}.json").read_text())
    trained = meta["trained"]
    assert meta["version"] == version == expected and set(meta["features"]) <= set(FEATURES)
    assert trained["tasks"] == "corpus_tasks.jsonl" and trained["train_split"] == "train"
    assert trained["calib_split"] == "out-of-fold" and trained["tasks_n"] >= 2000
    return meta, trained


def test_the_shipped_ranker_trained_on_the_corpus_train_split_loads_offline_and_scores_a_matrix() -> None:
    """The model the package loads: trained on corpus train only (dev chooses, test unseen), without the
    semantic group (it did not pay on dev: ``bench/RANKER.md``, session 9), so running it never loads
    the word vectors."""
    here = resources.files("durable_navigator.repomap.chunkrank")
    meta, trained = _trained_on_corpus_train(MODEL_VERSION, "ranker-v5")
    assert trained["dropped_groups"] == ["semantic"] and not set(meta["features"]) & set(GROUPS["semantic"])
    assert "is_data" in meta["features"]
    assert sorted(p.name for p in here.iterdir() if p.name.startswith("ranker-v")) == sorted(
        f"{v}.{ext}" for v in (MODEL_VERSION, HISTORY_MODEL_VERSION) for ext in ("json", "txt"))  # two models ship
    ranker = load_ranker()
    assert ranker.version == MODEL_VERSION and ranker.booster.num_trees() == trained["trees"]
    assert not ranker.semantic
    # the calibration's top bins: the goal's best chunk is worth more than the best 1/16 on average
    for xs in ranker.calibration.rel:
        assert xs and xs[-1] > -0.25
    assert 0.0 <= ranker.cost_power <= 1.0
    weak, strong = _weak_and_strong()
    mid = (weak + strong) / 2
    X = np.vstack([weak, mid, strong, weak])
    scores, full, sig = ranker.values(X)
    assert scores.shape == full.shape == sig.shape == (4,) and np.isfinite(scores).all()
    assert scores[2] > scores[0] and scores[3] == scores[0]  # the matching chunk first; deterministic
    assert (full >= 0).all() and (sig >= 0).all()
    assert full[2] > full[0]  # same size bucket: the better score is worth more expected lines


def test_the_history_model_trained_on_the_corpus_train_split_reads_the_newest_commits_and_loads_offline() -> None:
    """The model for a checkout with history: ranker-v5's recipe plus the ``history_recent`` group over the
    newest ``RECENT_COMMITS`` (chosen on corpus dev: ``bench/RANKER.md``, session 17)."""
    from durable_navigator.repomap.chunkrank.history import RECENT_COMMITS

    meta, trained = _trained_on_corpus_train(HISTORY_MODEL_VERSION, "ranker-v6")
    assert set(GROUPS["history_recent"]) <= set(meta["features"]) and RECENT_COMMITS == 100
    assert not set(meta["features"]) & set(GROUPS["semantic"] + GROUPS["history_line"])
    ranker = load_ranker(HISTORY_MODEL_VERSION)
    assert ranker.recent and not ranker.line_history and not ranker.semantic
    assert ranker.booster.num_trees() == trained["trees"]
    weak, strong = _weak_and_strong()
    touched = strong.copy()
    touched[FEATURES.index("hist_recent_span")] = 2.0
    touched[FEATURES.index("hist_recent_file")] = 3.0
    scores, full, _sig = ranker.values(np.vstack([weak, strong, touched]))
    assert scores[1] > scores[0] and full[1] > full[0] and np.isfinite(scores).all()
    assert scores[2] != scores[1]  # the newest commits' features move the score


def _history(n: int, diffs: bool) -> "History":
    from durable_navigator.repomap.chunkrank.history import History

    return History([f"change {i}" for i in range(n)], [["a.py"]] * n, [f"{i:040x}" for i in range(n)],
                   (lambda shas: {}) if diffs else None)


def test_a_tree_gets_the_history_model_only_with_a_readable_history_longer_than_the_recent_window() -> None:
    """``ranker_for``: the history model's ``history_recent`` values are only what it was trained on when
    the newest ``RECENT_COMMITS`` are a slice of a longer history whose diffs can be read; without a
    ``.git``, with a young repository or a log without diffs (a partial clone), the other model ranks."""
    from durable_navigator.repomap.chunkrank.history import RECENT_COMMITS
    from durable_navigator.repomap.chunkrank.model import ranker_for

    assert ranker_for(None).version == MODEL_VERSION
    assert ranker_for(_history(5, diffs=True)).version == MODEL_VERSION
    assert ranker_for(_history(RECENT_COMMITS, diffs=True)).version == MODEL_VERSION
    assert ranker_for(_history(RECENT_COMMITS + 1, diffs=False)).version == MODEL_VERSION
    assert ranker_for(_history(RECENT_COMMITS + 1, diffs=True)).version == HISTORY_MODEL_VERSION


def test_only_a_model_that_reads_line_level_history_pays_for_it_and_its_snapshots_carry_the_diffs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ChunkRanker.line_history`` follows the features the model reads: the shipped history model reads
    the ``history_recent`` group and not ``history_line``, so a snapshot carries the newest
    ``RECENT_COMMITS``' condensed diffs and no older one; a model that reads ``history_line`` makes a
    snapshot carry every commit's."""
    import lightgbm as lgb

    from durable_navigator.repomap.chunkrank import fromengine, model
    from durable_navigator.repomap.chunkrank.model import ChunkRanker

    shipped = load_ranker(HISTORY_MODEL_VERSION)
    assert not shipped.line_history and not set(shipped.features) & set(GROUPS["history_line"]) and shipped.recent
    rng = np.random.default_rng(0)
    booster = lgb.train({"objective": "regression", "verbosity": -1, "num_leaves": 4},
                        lgb.Dataset(rng.random((50, 2)), rng.random(50)), num_boost_round=2)
    reader = ChunkRanker(booster.model_to_string(), ["chunk_bm25", "hist_span"], shipped.calibration, "ranker-v99",
                         shipped.cost_power)
    assert reader.line_history
    root = tmp_path / "repo"
    root.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "HOME": str(root), "PATH": "/usr/bin:/bin"}
    (root / "a.py").write_text("def f():\n    return 1\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "first"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)
    (root / "b.py").write_text("def g():\n    return 2\n")
    for args in (["add", "-A"], ["commit", "-qm", "second"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)
    monkeypatch.setattr(fromengine, "RECENT_COMMITS", 1)
    recent = fromengine.history_log(root)
    assert "\x1ddiffs" in recent and "+++ b/b.py" in recent and "+++ b/a.py" not in recent  # the newest only
    monkeypatch.setattr(model, "load_ranker", lambda *a, **k: reader)
    every = fromengine.history_log(root)
    assert "\x1ddiffs" in every and "+++ b/a.py" in every and "+++ b/b.py" in every


def test_a_bagged_model_scores_the_mean_of_its_boosters() -> None:
    """``train_ranker.py --bag K`` writes K boosters into one file; the ranker averages their scores."""
    import lightgbm as lgb

    from durable_navigator.repomap.chunkrank.model import BAG_SEPARATOR, ChunkRanker

    shipped = load_ranker()
    rng = np.random.default_rng(1)
    X, y = rng.random((80, 2)), rng.random(80)
    one, two = (lgb.train({"objective": "regression", "verbosity": -1, "num_leaves": 4, "seed": s,
                           "bagging_fraction": 0.5, "bagging_freq": 1}, lgb.Dataset(X, y), num_boost_round=3)
                for s in (1, 2))
    features = ["chunk_bm25", "n_lines"]
    bag = ChunkRanker(one.model_to_string() + BAG_SEPARATOR + two.model_to_string(), features, shipped.calibration,
                      "ranker-v98", shipped.cost_power)
    full = np.zeros((5, len(FEATURES)))
    full[:, [FEATURES.index(f) for f in features]] = X[:5]
    assert len(bag.boosters) == 2
    assert np.allclose(bag.score(full), (one.predict(X[:5]) + two.predict(X[:5])) / 2)
    assert not np.allclose(one.predict(X[:5]), two.predict(X[:5]))  # two seeds, two models


def test_a_calibration_anchored_on_the_best_few_scores_reads_them_as_it_was_fitted() -> None:
    """``anchor`` K: scores relative to the mean of the goal's K best; 1 is the best alone (ranker-v5)."""
    from durable_navigator.repomap.chunkrank.model import anchored

    s = np.array([5.0, 1.0, 3.0, 2.0])
    assert np.allclose(anchored(s), s - 5.0)
    assert np.allclose(anchored(s, 2), s - 4.0)
    assert np.allclose(anchored(s, 9), s - 2.75)  # more than the goal has: all of them
    assert len(anchored(np.zeros(0), 3)) == 0
    rng = np.random.default_rng(5)
    rel = rng.normal(0, 1, 3000)
    share = np.clip(0.05 + 0.02 * rel, 0, None)
    cal = Calibration.fit(rel, np.full(3000, 30.0), share, share / 4, anchor=4)
    assert cal.anchor == 4
    goal = np.array([2.0, 1.0, 0.5, 0.5, -1.0])
    full, _sig = cal.values(goal, np.full(5, 30.0))
    want = np.interp(goal - 1.0, cal.rel[2], cal.full[2])  # 30 lines: the third size bucket
    assert np.allclose(full, want) and full[0] > full[-1]
