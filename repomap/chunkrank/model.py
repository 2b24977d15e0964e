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

from durable_navigator.repomap.chunkrank.features import FEATURES

__all__ = ["MODEL_VERSION", "ChunkRanker", "Calibration", "load_ranker"]

MODEL_VERSION = "ranker-v1"


@dataclass(frozen=True)
class Calibration:
    """Relative score (ascending, <= 0) -> expected gold-line share in full / on the first line."""

    rel: tuple[float, ...]
    full: tuple[float, ...]
    sig: tuple[float, ...]

    def values(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Expected share of gold lines per chunk, in full and as a signature."""
        if len(scores) == 0:
            return np.zeros(0), np.zeros(0)
        rel = scores - float(scores.max())
        return np.interp(rel, self.rel, self.full), np.interp(rel, self.rel, self.sig)

    @classmethod
    def fit(cls, rel: np.ndarray, share_full: np.ndarray, share_sig: np.ndarray, bins: int = 24) -> "Calibration":
        """Binned means over quantiles of ``rel``, made non-decreasing (a better score never means less)."""
        edges = np.unique(np.quantile(rel, np.linspace(0, 1, bins + 1)))
        which = np.clip(np.searchsorted(edges, rel, side="right") - 1, 0, max(len(edges) - 2, 0))
        xs, fs, ss = [], [], []
        for b in range(max(len(edges) - 1, 1)):
            m = which == b
            if m.any():
                xs.append(float(rel[m].mean()))
                fs.append(float(share_full[m].mean()))
                ss.append(float(share_sig[m].mean()))
        return cls(tuple(xs), tuple(np.maximum.accumulate(fs)), tuple(np.maximum.accumulate(ss)))


class ChunkRanker:
    """A loaded model: ``score`` ranks candidate chunks, ``values`` prices them for the allocator."""

    def __init__(self, model_text: str, features: list[str], calibration: Calibration, version: str) -> None:
        import lightgbm  # loaded only when ranking: the engine's other paths never pay for it

        unknown = sorted(set(features) - set(FEATURES))
        if unknown:
            raise ValueError(f"model {version} reads features this engine does not compute: {unknown}; "
                             "rebuild it with bench/train_ranker.py")
        self.booster = lightgbm.Booster(model_str=model_text)
        self.features = features
        self.columns = [FEATURES.index(f) for f in features]
        self.calibration = calibration
        self.version = version

    def score(self, X: np.ndarray) -> np.ndarray:
        """Ranking scores of the rows of a full feature matrix (columns in ``FEATURES`` order)."""
        if len(X) == 0:
            return np.zeros(0)
        return np.asarray(self.booster.predict(X[:, self.columns], num_threads=1), dtype=np.float64)

    def values(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(scores, expected share in full, expected share as a signature)."""
        s = self.score(X)
        full, sig = self.calibration.values(s)
        return s, full, sig


@lru_cache(maxsize=2)
def load_ranker(version: str = MODEL_VERSION) -> ChunkRanker:
    """The model shipped in this package (read once per process)."""
    here = resources.files("durable_navigator.repomap.chunkrank")
    meta = json.loads(here.joinpath(f"{version}.json").read_text(encoding="utf-8"))
    text = here.joinpath(f"{version}.txt").read_text(encoding="utf-8")
    cal = meta["calibration"]
    return ChunkRanker(text, list(meta["features"]), Calibration(tuple(cal["rel"]), tuple(cal["full"]),
                                                                  tuple(cal["sig"])), version)
