"""The shipped chunk-ranker model loads offline from the package and prices chunks sensibly."""

from __future__ import annotations

import json
from importlib import resources

import numpy as np

from durable_navigator.repomap.chunkrank.features import FEATURES, GROUPS
from durable_navigator.repomap.chunkrank.model import MODEL_VERSION, Calibration, load_ranker


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


def test_the_shipped_ranker_trained_on_the_corpus_train_split_loads_offline_and_scores_a_matrix() -> None:
    """The model the package loads: trained on corpus train only (dev chooses, test unseen), without the
    semantic group (it did not pay on dev: ``bench/RANKER.md``, session 9), so running it never loads
    the word vectors."""
    here = resources.files("durable_navigator.repomap.chunkrank")
    meta = json.loads(here.joinpath(f"{MODEL_VERSION}.json").read_text())
    trained = meta["trained"]
    assert meta["version"] == MODEL_VERSION == "ranker-v5" and set(meta["features"]) <= set(FEATURES)
    assert trained["tasks"] == "corpus_tasks.jsonl" and trained["train_split"] == "train"
    assert trained["calib_split"] == "out-of-fold" and trained["tasks_n"] >= 2000
    assert trained["dropped_groups"] == ["semantic"] and not set(meta["features"]) & set(GROUPS["semantic"])
    assert "is_data" in meta["features"]
    assert sorted(p.name for p in here.iterdir() if p.name.startswith("ranker-v")) == [
        f"{MODEL_VERSION}.json", f"{MODEL_VERSION}.txt"]  # one model ships
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
