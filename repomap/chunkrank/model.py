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

__all__ = ["MODEL_VERSION", "BAG_SEPARATOR", "STAGE_SEPARATOR", "VALUE_SEPARATOR", "STACK_FEATURES", "ChunkRanker", "Calibration", "anchored",
           "load_ranker", "ranker_from_files", "chunk_lines", "size_bucket", "stack_features", "file_bucket", "SIZE_EDGES",
           "FILE_CHUNK_EDGES"]

MODEL_VERSION = "ranker-v5"
#: between the boosters of a bagged model in its ``.txt`` file
BAG_SEPARATOR = "\n%% next booster of the bag %%\n"
#: between a stacked model's first and second stage in its ``.txt`` file
STAGE_SEPARATOR = "\n%% second stage %%\n"
#: before a model's value booster in its ``.txt`` file
VALUE_SEPARATOR = "\n%% value model %%\n"
#: what a stacked model's second stage reads besides ``FEATURES``: each chunk among the goal's other
#: candidates by the first stage's score -- the chunk's own score and rank, its file's best score and
#: rank, how many of the goal's 20 best chunks its file holds, its rank inside its file, its file's
#: share of the goal's score mass, and how far the goal's best chunk is ahead of the second
STACK_FEATURES = ("s1_rel", "s1_rank", "file_best_rel", "file_rank", "file_top", "in_file_rank", "file_mass",
                  "goal_gap", "n_candidates")
_TOP = 20


#: chunk sizes (lines) that get a calibration table of their own: a long chunk with the same score
#: holds more gold lines than a short one, and the allocator prices lines per token
SIZE_EDGES = (8, 20, 50)


#: files by how many candidate chunks they hold: each bucket's whole-file value gets a factor of its own
#: (``ChunkRanker.file_factor``) -- the sum of a file's chunk values is the expected share of the
#: changed lines in it only if each value is right, and the many small values of a long file's tail
#: add up to more than such files hold
FILE_CHUNK_EDGES = (2, 5, 10, 20, 40, 80)


def file_bucket(n_chunks: int) -> int:
    """Bucket index (0..len(FILE_CHUNK_EDGES)) of a file with ``n_chunks`` candidate chunks."""
    return int(np.searchsorted(np.asarray(FILE_CHUNK_EDGES), n_chunks, side="right"))


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
    every other chunk too little: on the corpus train split out of fold, its chunks hold 3.4 times
    what the table said where the best leads the second by more than 2, and 0.57 times where they
    are within 0.1; relative to the mean of the best 8 the two are 1.01 and 0.83
    (``bench/RANKER.md``, session 13)."""

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


def stack_features(s: np.ndarray, files: list[str]) -> np.ndarray:
    """``STACK_FEATURES`` of one goal's candidates from their first-stage scores ``s`` and files."""
    n = len(s)
    out = np.zeros((n, len(STACK_FEATURES)), dtype=np.float64)
    if n == 0:
        return out
    s = np.asarray(s, dtype=np.float64)
    _names, inv = np.unique(np.asarray(files, dtype=object).astype(str), return_inverse=True)
    nf = int(inv.max()) + 1
    order = np.argsort(-s, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    top = float(s[order[0]])
    best = np.full(nf, -np.inf)
    np.maximum.at(best, inv, s)
    file_rank = np.empty(nf, dtype=np.int64)
    file_rank[np.argsort(-best, kind="stable")] = np.arange(nf)
    by_file = np.lexsort((rank, inv))  # grouped by file, best first inside each
    first_of = np.searchsorted(inv[by_file], np.arange(nf))
    in_file = np.empty(n, dtype=np.int64)
    in_file[by_file] = np.arange(n) - first_of[inv[by_file]]
    mass = np.exp(np.clip(s - top, -50.0, 0.0))
    file_mass = np.bincount(inv, weights=mass, minlength=nf)
    out[:, 0] = s - top
    out[:, 1] = np.log1p(rank)
    out[:, 2] = best[inv] - top
    out[:, 3] = np.log1p(file_rank[inv])
    out[:, 4] = np.bincount(inv[rank < _TOP], minlength=nf)[inv]
    out[:, 5] = np.log1p(in_file)
    out[:, 6] = file_mass[inv] / file_mass.sum()
    out[:, 7] = top - float(s[order[1]]) if n > 1 else 0.0
    out[:, 8] = np.log1p(n)
    return out


class ChunkRanker:
    """A loaded model: ``score`` ranks candidate chunks, ``values`` prices them for the allocator."""

    def __init__(self, model_text: str, features: list[str], calibration: Calibration, version: str,
                 cost_power: float = 1.0, stage2_features: list[str] | None = None,
                 value_features: list[str] | None = None, file_factors: tuple[float, ...] | None = None) -> None:
        import lightgbm  # loaded only when ranking: the engine's other paths never pay for it

        extra = set(stage2_features or ()) | set(value_features or ())
        unknown = sorted(set(features) - set(FEATURES)) + sorted(extra - set(FEATURES + STACK_FEATURES))
        if unknown:
            raise ValueError(f"model {version} reads features this engine does not compute: {unknown}; "
                             "rebuild it with bench/train_ranker.py")
        model_text, _, value_text = model_text.partition(VALUE_SEPARATOR)
        if bool(value_text) != (value_features is not None):
            raise ValueError(f"model {version}: its file and its feature list disagree on a value model; "
                             "rebuild it with bench/train_ranker.py")
        #: a value model (``bench/train_ranker.py --value-model``): the expected share of the goal's
        #: changed lines a chunk holds in full, regressed on ``value_features`` (``STACK_FEATURES`` of
        #: the first stage's scores among them) instead of read off the calibration's table
        self.value_boosters = [lightgbm.Booster(model_str=t) for t in value_text.split(BAG_SEPARATOR)] if value_text else []
        self.value_features = list(value_features or ())
        self.value_columns = [(FEATURES + STACK_FEATURES).index(f) for f in self.value_features]
        first, _, second = model_text.partition(STAGE_SEPARATOR)
        if bool(second) != (stage2_features is not None):
            raise ValueError(f"model {version}: its file and its feature list disagree on a second stage; "
                             "rebuild it with bench/train_ranker.py")
        #: one booster, or a bag of boosters trained alike on other seeds whose scores are averaged
        #: (``bench/train_ranker.py --bag``: the seed's share of a model's dev figure halves)
        self.boosters = [lightgbm.Booster(model_str=t) for t in first.split(BAG_SEPARATOR)]
        self.booster = self.boosters[0]
        #: a stacked model's second stage (``bench/train_ranker.py --stack``): it ranks again with
        #: ``STACK_FEATURES`` of the first stage's scores besides ``stage2_features``
        self.stage2 = [lightgbm.Booster(model_str=t) for t in second.split(BAG_SEPARATOR)] if second else []
        self.stage2_features = list(stage2_features or ())
        self.stage2_columns = [(FEATURES + STACK_FEATURES).index(f) for f in self.stage2_features]
        self.features = features
        self.columns = [FEATURES.index(f) for f in features]
        self.calibration = calibration
        #: per ``FILE_CHUNK_EDGES`` bucket, what the sum of a file's chunk values is multiplied by to be
        #: the file's expected share (fitted out of fold by ``bench/train_ranker.py``; none: 1)
        if file_factors is not None and len(file_factors) != len(FILE_CHUNK_EDGES) + 1:
            raise ValueError(f"model {version}: {len(file_factors)} file factors for "
                             f"{len(FILE_CHUNK_EDGES) + 1} buckets; rebuild it with bench/train_ranker.py")
        self.file_factors = tuple(file_factors) if file_factors is not None else None
        self.version = version
        #: the allocator's cost power chosen on dev with this model (``allocate(cost_power=...)``)
        self.cost_power = cost_power
        #: the model reads the ``semantic`` feature group (``chunk_features(semantic=True)``)
        self.semantic = any(f in GROUPS["semantic"] for f in features + self.stage2_features + self.value_features)
        #: the model reads the ``history_line`` group (``chunk_features(line_history=True)``)
        self.line_history = any(f in GROUPS["history_line"] for f in features + self.stage2_features + self.value_features)

    def file_factor(self, n_chunks: int) -> float:
        """What the sum of the values of a file's ``n_chunks`` candidate chunks is multiplied by."""
        return 1.0 if self.file_factors is None else self.file_factors[file_bucket(n_chunks)]

    def score(self, X: np.ndarray, files: list[str] | None = None) -> np.ndarray:
        """Ranking scores of one goal's candidates: the rows of a full feature matrix (columns in
        ``FEATURES`` order) and, for a stacked model, each row's file."""
        return self._scores(X, files)[1]

    def _scores(self, X: np.ndarray, files: list[str] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(first stage's scores, final scores, ``X`` with ``STACK_FEATURES`` appended when a later
        stage read them)."""
        if len(X) == 0:
            return np.zeros(0), np.zeros(0), None
        s = _mean_predict(self.boosters, X[:, self.columns])
        if not self.stage2 and not self.value_boosters:
            return s, s, None
        if files is None or len(files) != len(X):
            raise ValueError(f"model {self.version} reads its candidates' places: score() needs each candidate's file")
        both = np.hstack([X.astype(np.float64), stack_features(s, files)])
        return s, _mean_predict(self.stage2, both[:, self.stage2_columns]) if self.stage2 else s, both

    def values(self, X: np.ndarray, files: list[str] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(scores, expected share in full, expected share as a signature)."""
        _first, s, both = self._scores(X, files)
        full, sig = self.calibration.values(s, chunk_lines(X))
        if self.value_boosters and both is not None:
            full = np.clip(_mean_predict(self.value_boosters, both[:, self.value_columns]), 0.0, 1.0)
        return s, full, sig


def _mean_predict(boosters: list, X: np.ndarray) -> np.ndarray:
    return np.mean([np.asarray(b.predict(X, num_threads=1), dtype=np.float64) for b in boosters], axis=0)


def chunk_lines(X: np.ndarray) -> np.ndarray:
    """Each row's chunk length in lines (the ``n_lines`` feature is its log1p)."""
    return np.rint(np.expm1(X[:, FEATURES.index("n_lines")].astype(np.float64)))


@lru_cache(maxsize=2)
def load_ranker(version: str = MODEL_VERSION) -> ChunkRanker:
    """The model shipped in this package (read once per process)."""
    here = resources.files("durable_navigator.repomap.chunkrank")
    meta = json.loads(here.joinpath(f"{version}.json").read_text(encoding="utf-8"))
    text = here.joinpath(f"{version}.txt").read_text(encoding="utf-8")
    return ranker_from_files(meta, text)


def ranker_from_files(meta: dict, text: str) -> ChunkRanker:
    """The ranker a model's two files describe: its ``.json`` (parsed) and its ``.txt``."""
    cal = meta["calibration"]
    table = Calibration(*(tuple(tuple(t) for t in cal[k]) for k in ("rel", "full", "sig")), int(cal.get("anchor", 1)))
    stage2, value, factors = meta.get("stage2_features"), meta.get("value_features"), meta.get("file_factors")
    return ChunkRanker(text, list(meta["features"]), table, meta["version"], float(meta["cost_power"]),
                       list(stage2) if stage2 is not None else None, list(value) if value is not None else None,
                       tuple(factors) if factors is not None else None)
