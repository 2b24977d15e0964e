"""The shipped chunk ranker: a LightGBM lambdarank model plus a calibration, versioned text files here.

``ranker-v<N>.txt`` is LightGBM's own text dump (``Booster.model_to_string``),
``ranker-v<N>.json`` the features it reads (by name, in order) and a monotone
table that turns a chunk's score, relative to the best chunk of its goal, into the
expected share of the goal's gold lines the chunk holds in full (``full``) and on
its first line (``sig``, what a signature shows). Both are rebuilt by
``bench/train_ranker.py``; nothing is downloaded at run time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from durable_navigator.repomap.chunkrank.features import FEATURES, GROUPS
from durable_navigator.repomap.chunkrank.history import RECENT_COMMITS, History

__all__ = ["MODEL_VERSION", "HISTORY_MODEL_VERSION", "BAG_SEPARATOR", "ChunkRanker", "Calibration", "anchored",
           "load_ranker", "ranker_for", "ranker_from_files", "chunk_lines", "size_bucket", "SIZE_EDGES"]

#: the model for a tree without a readable history (or a short one)
MODEL_VERSION = "ranker-v5"
#: the model for a checkout whose history is readable and longer than the recent-activity window
#: (``history.RECENT_COMMITS``): it reads the ``history_recent`` group, which only such a history
#: gives the values it was trained on (every training task's parent had one; trained on trees with and
#: without history at once, a model loses the group's gain: ``bench/RANKER.md``, session 16)
HISTORY_MODEL_VERSION = "ranker-v6"
#: between the boosters of a bagged model in its ``.txt`` file
BAG_SEPARATOR = "\n%% next booster of the bag %%\n"


#: chunk sizes (lines) that get a calibration table of their own: a long chunk with the same score
#: holds more gold lines than a short one, and the allocator prices lines per token
SIZE_EDGES = (8, 20, 50)


def size_bucket(n_lines: np.ndarray) -> np.ndarray:
    """Bucket index (0..len(SIZE_EDGES)) of each chunk's line count."""
    return np.searchsorted(np.asarray(SIZE_EDGES), n_lines, side="left")


def anchored(scores: np.ndarray, anchor: int = 1) -> np.ndarray:
    """Scores relative to the mean of the goal's ``anchor`` best (1: the best one)."""
    if len(scores) == 0:
        return np.zeros(0)
    top = np.partition(scores, len(scores) - min(anchor, len(scores)))[-anchor:] if anchor > 1 else scores.max()
    return scores - float(np.mean(top))


@dataclass(frozen=True)
class Calibration:
    """Per size bucket: relative score (ascending) -> expected gold-line share in full / first line.

    A score is taken relative to the mean of the goal's ``anchor`` best scores. Relative to the best
    one alone (``anchor`` 1, ranker-v5), a goal whose best chunk stands far ahead of the rest gives
    every other chunk too little: on the corpus train split out of fold, among the chunks valued
    above 0.003, those of goals whose best leads the second by more than 2 hold 3.35 times what the
    table says, those of goals whose best two are within 0.1 of each other 0.57 times; relative to
    the mean of the best 8, 1.01 and 0.95 times (``bench/RANKER.md``, session 13)."""

    rel: tuple[tuple[float, ...], ...]
    full: tuple[tuple[float, ...], ...]
    sig: tuple[tuple[float, ...], ...]
    anchor: int = 1

    def values(self, scores: np.ndarray, n_lines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Expected share of the goal's gold lines per chunk, in full and as a signature."""
        full, sig = np.zeros(len(scores)), np.zeros(len(scores))
        if len(scores) == 0:
            return full, sig
        rel = anchored(scores, self.anchor)
        bucket = size_bucket(n_lines)
        for b in range(len(self.rel)):
            m = bucket == b
            if m.any() and self.rel[b]:
                full[m] = np.interp(rel[m], self.rel[b], self.full[b])
                sig[m] = np.interp(rel[m], self.rel[b], self.sig[b])
        return full, sig

    @classmethod
    def fit(cls, rel: np.ndarray, n_lines: np.ndarray, share_full: np.ndarray, share_sig: np.ndarray,
            bins: int = 16, min_points: int = 200, anchor: int = 1) -> "Calibration":
        """Binned means over quantiles of ``rel`` per size bucket, made non-decreasing (a better score
        never means less). Besides ``bins`` even quantiles, the bins halve toward the top (the top
        half, quarter, eighth ... of the chunks) while each holds ``min_points`` (0: even
        quantiles only, the calibration of ranker-v2): the allocator's
        choices are among the best-scored chunks, and one bin over the top 1/16 gave the goal's best
        chunk and its 25th one the same value."""
        tables: list[list[tuple[float, ...]]] = [[], [], []]
        bucket = size_bucket(n_lines)
        for b in range(len(SIZE_EDGES) + 1):
            m = bucket == b
            xs, fs, ss = _binned(rel[m], share_full[m], share_sig[m], bins, min_points) if m.any() else ([], [], [])
            tables[0].append(tuple(xs))
            tables[1].append(tuple(np.maximum.accumulate(fs).tolist()) if fs else ())
            tables[2].append(tuple(np.maximum.accumulate(ss).tolist()) if ss else ())
        out = [tuple(t) for t in tables]
        return cls(out[0], out[1], out[2], anchor)


def _binned(rel: np.ndarray, full: np.ndarray, sig: np.ndarray, bins: int,
            min_points: int) -> tuple[list[float], ...]:
    qs = list(np.linspace(0, 1, bins + 1))
    tail = 0.5
    while min_points > 0 and tail * len(rel) >= min_points:
        qs.append(1.0 - tail)
        tail /= 2
    edges = np.unique(np.quantile(rel, sorted(qs)))
    which = np.clip(np.searchsorted(edges, rel, side="right") - 1, 0, max(len(edges) - 2, 0))
    xs, fs, ss = [], [], []
    for b in range(max(len(edges) - 1, 1)):
        m = which == b
        if m.any():
            xs.append(float(rel[m].mean()))
            fs.append(float(full[m].mean()))
            ss.append(float(sig[m].mean()))
    return xs, fs, ss


class ChunkRanker:
    """A loaded model: ``score`` ranks candidate chunks, ``values`` prices them for the allocator."""

    def __init__(self, model_text: str, features: list[str], calibration: Calibration, version: str,
                 cost_power: float = 1.0) -> None:
        import lightgbm  # loaded only when ranking: the engine's other paths never pay for it

        unknown = sorted(set(features) - set(FEATURES))
        if unknown:
            raise ValueError(f"model {version} reads features this engine does not compute: {unknown}; "
                             "rebuild it with bench/train_ranker.py")
        #: one booster, or a bag of boosters trained alike on other seeds whose scores are averaged
        #: (``bench/train_ranker.py --bag``: the seed's share of a model's dev figure halves)
        self.boosters = [lightgbm.Booster(model_str=t) for t in model_text.split(BAG_SEPARATOR)]
        self.booster = self.boosters[0]
        self.features = features
        self.columns = [FEATURES.index(f) for f in features]
        self.calibration = calibration
        self.version = version
        #: the allocator's cost power chosen on dev with this model (``allocate(cost_power=...)``)
        self.cost_power = cost_power
        #: the model reads the ``semantic`` feature group (``chunk_features(semantic=True)``)
        self.semantic = any(f in GROUPS["semantic"] for f in features)
        #: the model reads the ``history_line`` group (``chunk_features(line_history=True)``)
        self.line_history = any(f in GROUPS["history_line"] for f in features)
        #: the model reads the ``corpus`` group (``chunk_features(corpus=True)``)
        self.corpus = any(f in GROUPS["corpus"] for f in features)
        #: the model reads the ``feedback`` group (``chunk_features(feedback=True)``)
        self.feedback = any(f in GROUPS["feedback"] for f in features)
        #: the model reads the ``assoc`` group (``chunk_features(assoc=True)``)
        self.assoc = any(f in GROUPS["assoc"] for f in features)
        #: the model reads the ``history_recent`` group (``chunk_features(recent=True)``)
        self.recent = any(f in GROUPS["history_recent"] for f in features)

    def reads(self) -> dict[str, bool]:
        """The optional feature groups this model reads, as ``chunk_features`` keywords (a group it
        does not read is not computed)."""
        return {"semantic": self.semantic, "line_history": self.line_history, "corpus": self.corpus,
                "feedback": self.feedback, "assoc": self.assoc, "recent": self.recent}

    def score(self, X: np.ndarray) -> np.ndarray:
        """Ranking scores of the rows of a full feature matrix (columns in ``FEATURES`` order)."""
        if len(X) == 0:
            return np.zeros(0)
        cols = X[:, self.columns]
        return np.mean([np.asarray(b.predict(cols, num_threads=1), dtype=np.float64) for b in self.boosters], axis=0)

    def values(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(scores, expected share in full, expected share as a signature)."""
        s = self.score(X)
        full, sig = self.calibration.values(s, chunk_lines(X))
        return s, full, sig


def chunk_lines(X: np.ndarray) -> np.ndarray:
    """Each row's chunk length in lines (the ``n_lines`` feature is its log1p)."""
    return np.rint(np.expm1(X[:, FEATURES.index("n_lines")].astype(np.float64)))


@lru_cache(maxsize=4)
def load_ranker(version: str = MODEL_VERSION) -> ChunkRanker:
    """A model shipped in this package (each read once per process: both shipped models, and
    ``load_ranker()`` is a key of its own)."""
    here = resources.files("durable_navigator.repomap.chunkrank")
    meta = json.loads(here.joinpath(f"{version}.json").read_text(encoding="utf-8"))
    text = here.joinpath(f"{version}.txt").read_text(encoding="utf-8")
    return ranker_from_files(meta, text)


def ranker_for(history: History | None) -> ChunkRanker:
    """The shipped model for a tree with this history (``fromengine.repo_history``; None: none readable):
    ``HISTORY_MODEL_VERSION`` when it holds more commits than the recent-activity window and their
    diffs can be read (not a partial clone, not a snapshot that carries the log only), else
    ``MODEL_VERSION``: what the history model was trained on, or nothing of it."""
    readable = history is not None and history.diffs is not None and len(history.shas) > RECENT_COMMITS
    return load_ranker(HISTORY_MODEL_VERSION if readable else MODEL_VERSION)


def ranker_from_files(meta: dict, text: str) -> ChunkRanker:
    """The ranker a model's two files describe: its ``.json`` (parsed) and its ``.txt``."""
    cal = meta["calibration"]
    table = Calibration(*(tuple(tuple(t) for t in cal[k]) for k in ("rel", "full", "sig")), int(cal.get("anchor", 1)))
    return ChunkRanker(text, list(meta["features"]), table, meta["version"], float(meta["cost_power"]))
