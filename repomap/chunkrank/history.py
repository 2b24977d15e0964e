"""The repository's own git history as ranking signals (only when a ``.git`` is there).

One ``git log`` of the last ``MAX_COMMITS`` non-merge commits reachable from a
revision (never anything after it: a benchmark task's checkout passes its parent)
gives, per commit, its message terms and the files it touched. Per goal:

* ``hist_msg`` -- past commits whose messages resemble the goal (BM25 over
  messages, the best ``TOP_COMMITS``), their similarity summed onto the files they
  touched (normalised to the best file);
* ``hist_churn`` -- log of how many of those commits touched the file;
* ``hist_recency`` -- 1 / (1 + commits since the file was last touched / 100);
* ``hist_cochange`` -- share of the file's commits that also touched one of the
  goal's strongest lexical candidate files (``seed`` files).
"""

from __future__ import annotations

import subprocess
from functools import lru_cache
from pathlib import Path

import numpy as np

from durable_navigator.repomap.chunkrank.chunks import tokenize
from durable_navigator.repomap.chunkrank.lexical import bm25_scores

__all__ = ["History", "load_history", "history_from_log", "run_log", "HISTORY_FEATURES", "MAX_COMMITS",
           "TOP_COMMITS"]

MAX_COMMITS = 3000
TOP_COMMITS = 30
_GIT_TIMEOUT_S = 30
_SEP_COMMIT, _SEP_FIELD = "\x1e", "\x1f"
HISTORY_FEATURES = ("hist_msg", "hist_churn", "hist_recency", "hist_cochange")


class History:
    """Commits (newest first): message term counts and touched files, as sparse matrices."""

    def __init__(self, messages: list[str], touched: list[list[str]]) -> None:
        import scipy.sparse as sp

        vocab: dict[str, int] = {}
        rows, cols = [], []
        for i, msg in enumerate(messages):
            for t in tokenize(msg):
                rows.append(i)
                cols.append(vocab.setdefault(t, len(vocab)))
        self.vocab = vocab
        self.msg_tf = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(messages), len(vocab)))
        self.msg_tf.sum_duplicates()
        paths: dict[str, int] = {}
        r2, c2 = [], []
        for i, files in enumerate(touched):
            for f in set(files):
                r2.append(i)
                c2.append(paths.setdefault(f, len(paths)))
        self.paths = paths
        self.touch = sp.csr_matrix((np.ones(len(r2)), (r2, c2)), shape=(len(messages), len(paths)))
        self.n = len(messages)

    def features(self, files: list[str], goal_terms: list[str], seeds: list[str]) -> dict[str, np.ndarray]:
        """Per file of ``files``: the ``HISTORY_FEATURES`` (zeros for files the history never touched)."""
        nf = len(files)
        out = {k: np.zeros(nf) for k in HISTORY_FEATURES}
        idx = np.array([self.paths.get(f, -1) for f in files])
        known = idx >= 0
        if self.n == 0 or not known.any():
            return out
        touch = self.touch.tocsc()[:, idx[known]]
        counts = np.asarray(touch.sum(axis=0)).ravel()
        out["hist_churn"][known] = np.log1p(counts)
        first = np.full(touch.shape[1], self.n, dtype=np.float64)
        for j in range(touch.shape[1]):  # rows are sorted in CSC: the first is the newest commit
            lo, hi = touch.indptr[j], touch.indptr[j + 1]
            if hi > lo:
                first[j] = touch.indices[lo:hi].min()
        out["hist_recency"][known] = 1.0 / (1.0 + first / 100.0)
        cols = [c for t in dict.fromkeys(goal_terms) if (c := self.vocab.get(t)) is not None]
        sim = bm25_scores(self.msg_tf, cols)
        if sim.max() > 0:
            top = np.argsort(-sim, kind="stable")[:TOP_COMMITS]
            w = np.zeros(self.n)
            w[top] = sim[top]
            got = np.asarray(touch.T @ w).ravel()
            out["hist_msg"][known] = got / max(float(got.max()), 1e-9)
        seed_cols = [self.paths[s] for s in seeds if s in self.paths]
        if seed_cols:
            with_seed = np.asarray(self.touch[:, seed_cols].sum(axis=1)).ravel() > 0
            both = np.asarray(touch.T @ with_seed.astype(np.float64)).ravel()
            out["hist_cochange"][known] = both / np.maximum(counts, 1.0)
        return out


def run_log(git_dir: Path, rev: str, max_commits: int = MAX_COMMITS) -> str:
    """The ``git log`` text a :class:`History` is parsed from (``""`` when git cannot read it)."""
    proc = subprocess.run(
        ["git", f"--git-dir={git_dir}", "log", "--no-merges", f"-n{max_commits}", "--no-renames",
         f"--format={_SEP_COMMIT}%s%n%b{_SEP_FIELD}", "--name-only", rev, "--"],
        capture_output=True, timeout=_GIT_TIMEOUT_S, check=False)
    return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else ""


@lru_cache(maxsize=8)
def load_history(git_dir: Path, rev: str = "HEAD", max_commits: int = MAX_COMMITS) -> History | None:
    """The history reachable from ``rev`` in ``git_dir`` (a ``.git`` dir or a bare repository);
    None when git cannot read it (no git, not a repository, an unknown revision)."""
    try:
        text = run_log(git_dir, rev, max_commits)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return history_from_log(text)


@lru_cache(maxsize=4)
def history_from_log(text: str) -> History | None:
    """The history in ``git log`` text from :func:`run_log` (None when it holds no commit)."""
    if not text:
        return None
    messages, touched = [], []
    for block in text.split(_SEP_COMMIT)[1:]:
        msg, _, names = block.partition(_SEP_FIELD)
        messages.append(msg)
        touched.append([ln for ln in names.splitlines() if ln.strip()])
    return History(messages, touched)
