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

At line level (``LINE_FEATURES``, per candidate chunk; from one ``git show -U0`` of
those best ``TOP_COMMITS``, or from the condensed diffs a snapshot carries; zeros in a
partial clone and from a bare log), each commit weighted by its similarity over the
best one's:

* ``hist_span`` -- summed weight of the commits whose hunks (their line ranges in the
  commit's own version of the file) overlap the chunk's lines;
* ``hist_name`` -- summed weight of the commits whose hunks in the chunk's file name the
  chunk's definition (the hunk header's enclosing definition, or a changed line);
* ``hist_code`` -- the idf-weighted share of the chunk's terms that those commits
  changed in its file, each term weighted by the commits that changed it.

Recent activity (``RECENT_FEATURES``, per candidate chunk, whatever the goal; from one
``git show -U0`` of the newest ``RECENT_COMMITS``, or the diffs a snapshot carries), commit
``i`` (0 the newest) weighted ``1 / (1 + i / 5)``:

* ``hist_recent_span`` -- summed weight of the recent commits whose hunks overlap the chunk's
  lines, each hunk carried forward through the newer commits' hunks to the revision's own
  line numbers (a commit series reworks the code its last commits touched);
* ``hist_recent_file`` -- summed weight of the recent commits that touched the chunk's file.
"""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from durable_navigator.repomap.chunkrank.chunks import tokenize
from durable_navigator.repomap.chunkrank.lexical import bm25_scores

if TYPE_CHECKING:
    from durable_navigator.repomap.chunkrank.chunks import RepoChunks

log = logging.getLogger("durable_navigator.repomap.chunkrank")

__all__ = ["History", "FileDiff", "load_history", "history_from_log", "history_text", "run_log", "show_diffs",
           "log_diffs", "parse_diffs", "condense_diffs", "HISTORY_FEATURES", "LINE_FEATURES", "RECENT_FEATURES",
           "MAX_COMMITS", "TOP_COMMITS", "RECENT_COMMITS", "carry_forward"]

MAX_COMMITS = 3000
TOP_COMMITS = 30
#: the newest commits the ``RECENT_FEATURES`` read (100 beat 30 on corpus dev: bench/RANKER.md, session 16)
RECENT_COMMITS = 100
_GIT_TIMEOUT_S = 30
_SEP_COMMIT, _SEP_FIELD = "\x1e", "\x1f"
#: between the log and the condensed diffs in :func:`history_text`
_SEP_DIFFS = "\x1d\x1ddiffs\x1d\n"
HISTORY_FEATURES = ("hist_msg", "hist_churn", "hist_recency", "hist_cochange")
LINE_FEATURES = ("hist_span", "hist_name", "hist_code")
RECENT_FEATURES = ("hist_recent_span", "hist_recent_file")
#: the diff text of one commit read at most (a vendored tree or a mass reformat)
_MAX_COMMIT_BYTES = 1 << 20
#: changed lines read per file of a commit at most (past this the commit rewrote the file)
_MAX_FILE_LINES = 400
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: git's built-in function-name drivers, so a hunk header names the enclosing definition (a method,
#: not just its class); passed as ``core.attributesFile``, the repository's own attributes win
_ATTRIBUTES = Path(__file__).with_name("history.gitattributes")


class FileDiff:
    """What one commit changed in one file: its hunks' line ranges (in the commit's version of the
    file), each hunk as ``(old start, old count, new start, new count)``, the identifiers its hunk
    headers name, the words of its changed lines (at most ``_MAX_FILE_LINES`` of them)."""

    __slots__ = ("ranges", "hunks", "headers", "words", "n_lines")

    def __init__(self) -> None:
        self.ranges: list[tuple[int, int]] = []
        self.hunks: list[tuple[int, int, int, int]] = []
        self.headers: set[str] = set()
        self.words: set[str] = set()
        self.n_lines = 0

    @property
    def names(self) -> set[str]:
        """Identifiers the hunks name: their headers' (the enclosing definitions) and the changed lines'."""
        return self.headers | {w for w in self.words if len(w) > 2}

    @property
    def terms(self) -> set[str]:
        """The changed lines' terms (``tokenize``)."""
        return set(tokenize(" ".join(sorted(self.words))))


#: per commit, per file it changed: what changed there
Diffs = dict[str, dict[str, FileDiff]]


def _carry_line(x: int, hunks: list[tuple[int, int, int, int]]) -> int:
    """Line ``x`` of a file before a commit whose hunks are ``hunks`` (``-U0``), in the file after it
    (a line the commit replaced or removed: where its replacement starts)."""
    shift = 0
    for old, old_n, new, new_n in hunks:
        if old_n == 0:  # inserted after old line ``old``
            if x > old:
                shift += new_n
            continue
        if x < old:
            break
        if x < old + old_n:
            return new + min(x - old, max(new_n - 1, 0)) if new_n else max(new, 1)
        shift += new_n - old_n
    return x + shift


def carry_forward(a: int, b: int, newer: list[FileDiff]) -> tuple[int, int]:
    """Lines ``a..b`` of a file as one commit left it, in the file's numbering after the ``newer``
    commits' changes to it (oldest first)."""
    for fd in newer:
        a, b = _carry_line(a, fd.hunks), _carry_line(b, fd.hunks)
    return a, max(a, b)


class History:
    """Commits (newest first): message term counts and touched files, as sparse matrices."""

    def __init__(self, messages: list[str], touched: list[list[str]], shas: list[str] | None = None,
                 diffs: Callable[[list[str]], Diffs] | None = None) -> None:
        import scipy.sparse as sp

        self.shas = shas or []
        #: the diffs of the given commits (``show_diffs`` on the repository, or those a snapshot carries)
        self.diffs = diffs if self.shas else None
        self._shown: dict[tuple[str, ...], Diffs] = {}
        self._top: tuple[tuple[str, ...], tuple[np.ndarray, np.ndarray]] | None = None
        #: per file, the newest commits' hunks in the revision's line numbers (``recent_features``)
        self._recent: dict[str, list[tuple[float, list[tuple[int, int]]]]] | None = None

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
        top, sim = self.top_commits(goal_terms)
        if len(top):
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

    def top_commits(self, goal_terms: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The best ``TOP_COMMITS`` commits by BM25 of their messages against the goal (similarity > 0),
        and every commit's similarity (the last goal's kept: its file and line features both ask)."""
        key, last = tuple(goal_terms), self._top  # one read: a worker's threads share a History
        if last is not None and last[0] == key:
            return last[1]
        cols = [c for t in dict.fromkeys(goal_terms) if (c := self.vocab.get(t)) is not None]
        sim = bm25_scores(self.msg_tf, cols) if self.n else np.zeros(0)
        if not self.n or sim.max() <= 0:
            got = (np.zeros(0, dtype=np.int64), sim)
        else:
            top = np.argsort(-sim, kind="stable")[:TOP_COMMITS]
            got = (top[sim[top] > 0], sim)
        self._top = (key, got)
        return got

    def line_features(self, rc: "RepoChunks", rows: np.ndarray, goal_terms: list[str]) -> dict[str, np.ndarray]:
        """``LINE_FEATURES`` of the chunks ``rows`` of ``rc`` (arrays over all of ``rc``'s chunks, zero
        outside ``rows``, and everywhere when the commits' diffs cannot be read)."""
        n = len(rc.spans)
        out = {k: np.zeros(n) for k in LINE_FEATURES}
        if self.diffs is None or len(rows) == 0:
            return out
        top, sim = self.top_commits(goal_terms)
        if not len(top):
            return out
        weight = {self.shas[i]: float(sim[i] / sim[top[0]]) for i in top}
        key = tuple(self.shas[i] for i in top)
        per_commit = self._shown.get(key)
        if per_commit is None:
            try:
                per_commit = self.diffs(list(key))
            except (OSError, subprocess.SubprocessError) as exc:
                log.warning("history: cannot read the diffs of %d past commits (%s); line-level signals off", len(key), exc)
                return out
            if len(self._shown) >= 16:
                self._shown.clear()
            self._shown[key] = per_commit  # a run's turns ask for the same goal's commits again
        by_file: dict[str, list[tuple[float, FileDiff]]] = {}
        for sha, files in per_commit.items():
            for path, fd in files.items():
                by_file.setdefault(path, []).append((weight.get(sha, 0.0), fd))
        file_of = rc.file_of[rows]
        index = rc.__dict__.get("_file_index")
        if index is None:
            index = rc.__dict__["_file_index"] = {p: i for i, p in enumerate(rc.files)}
        idf = np.log(1.0 + n / (1.0 + rc.chunk_df.astype(np.float64)))
        indptr, indices = rc.tf.indptr, rc.tf.indices
        code = np.zeros(len(rc.vocab))  # one file's changed-term weights at a time, reset after it
        for path, changes in by_file.items():
            f = index.get(path)
            if f is None:
                continue
            mine = rows[file_of == f]
            if not len(mine):
                continue
            names, touched = [], []
            for w, fd in changes:
                cols = [c for t in fd.terms if (c := rc.vocab.get(t)) is not None]
                code[cols] += w
                touched += cols
                names.append(fd.names)
            for i in mine:
                s = rc.spans[i]
                out["hist_span"][i] = sum(w for w, fd in changes
                                          if any(a <= s.end and b >= s.start for a, b in fd.ranges))
                if len(s.name) > 2:
                    out["hist_name"][i] = sum(w for (w, _), got in zip(changes, names) if s.name in got)
                cols = indices[indptr[i]:indptr[i + 1]]
                mass = float(idf[cols].sum())
                if mass > 0:
                    out["hist_code"][i] = float((idf[cols] * code[cols]).sum()) / mass
            code[touched] = 0.0
        return out

    def recent_hunks(self) -> dict[str, list[tuple[float, list[tuple[int, int]]]]]:
        """Per file, each of the newest ``RECENT_COMMITS`` that changed it: its weight and its hunks'
        ranges carried forward to the revision's line numbers (read once; empty without diffs)."""
        got = self._recent
        if got is not None:
            return got
        got = {}
        shas = self.shas[:RECENT_COMMITS]
        if self.diffs is not None and shas:
            try:
                per_commit = self.diffs(shas)
            except (OSError, subprocess.SubprocessError) as exc:
                log.warning("history: cannot read the diffs of the %d newest commits (%s); recent activity off",
                            len(shas), exc)
                per_commit = {}
            newer: dict[str, list[FileDiff]] = {}  # per file, the newer commits' diffs, oldest first
            for i, sha in enumerate(shas):
                for path, fd in per_commit.get(sha, {}).items():
                    later = newer.setdefault(path, [])
                    got.setdefault(path, []).append(
                        (1.0 / (1.0 + i / 5.0), [carry_forward(a, b, later) for a, b in fd.ranges]))
                    later.insert(0, fd)
        self._recent = got
        return got

    def recent_features(self, rc: "RepoChunks", rows: np.ndarray) -> dict[str, np.ndarray]:
        """``RECENT_FEATURES`` of the chunks ``rows`` of ``rc`` (arrays over all of ``rc``'s chunks, zero
        outside ``rows``, and everywhere when the commits' diffs cannot be read)."""
        n = len(rc.spans)
        out = {k: np.zeros(n) for k in RECENT_FEATURES}
        hunks = self.recent_hunks()
        for i in rows:
            s = rc.spans[i]
            changes = hunks.get(s.path)
            if changes:
                out["hist_recent_file"][i] = sum(w for w, _ in changes)
                out["hist_recent_span"][i] = sum(w for w, ranges in changes
                                                 if any(a <= s.end and b >= s.start for a, b in ranges))
        return out


def parse_diffs(lines: Iterable[str] | str) -> Diffs:
    """Per commit (``git show``/``git log -p`` lines with ``--format=\\x1e%H``), per file it changed (its new
    path; a deleted file is left out): the :class:`FileDiff`. A commit's diff is read up to
    ``_MAX_COMMIT_BYTES`` (a vendored tree or a mass reformat), the same however it is read."""
    out: Diffs = {}
    files: dict[str, FileDiff] = {}
    cur: FileDiff | None = None
    seen, header = 0, True
    if isinstance(lines, str):
        lines = lines.split("\n")
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith(_SEP_COMMIT):
            files = out.setdefault(line[1:].strip(), {})
            cur, seen, header = None, 0, True
            continue
        seen += len(line) + 1
        if seen > _MAX_COMMIT_BYTES:
            cur = None
        elif line.startswith("diff --git "):
            cur, header = None, True
        elif header and line.startswith("+++ "):  # only in a file's header: "++ x" added is "+++ x"
            path = line[4:]
            cur = files.setdefault(path[2:], FileDiff()) if path.startswith("b/") else None
        elif header and not line.startswith("@@"):
            continue  # index, mode, "--- a/..." lines
        elif cur is None or cur.n_lines >= _MAX_FILE_LINES:
            header = False
            continue
        elif line.startswith("@@"):
            header = False
            m = _HUNK.match(line)
            if m:
                old, old_n = int(m.group(1)), int(m.group(2) or 1)
                start, count = int(m.group(3)), int(m.group(4) or 1)
                cur.ranges.append((start, start + max(count, 1) - 1))
                cur.hunks.append((old, old_n, start, count))
                cur.headers.update(_IDENT.findall(m.group(5)))
        elif line[:1] in ("+", "-"):
            cur.n_lines += 1
            cur.words.update(_WORD.findall(line, 1))
    return out


def condense_diffs(diffs: Diffs) -> str:
    """``diffs`` as text :func:`parse_diffs` reads back to the same ranges, headers and words (one hunk
    line per range, one changed line holding the words): what a snapshot carries of the history."""
    out: list[str] = []
    for sha, files in diffs.items():
        out.append(f"{_SEP_COMMIT}{sha}")
        for path, fd in files.items():
            out += [f"diff --git a/{path} b/{path}", f"+++ b/{path}"]
            for i, (old, old_n, start, count) in enumerate(fd.hunks):
                out.append(f"@@ -{old},{old_n} +{start},{count} @@ {' '.join(sorted(fd.headers)) if i == 0 else ''}".rstrip())
            if fd.words:
                out.append("+" + " ".join(sorted(fd.words)))
    return "\n".join(out)


def _git_diffs(git_dir: Path, args: list[str]) -> Diffs:
    """:func:`parse_diffs` of a ``git show``/``git log -p`` with ``args``, read as it streams."""
    cmd = ["git", f"--git-dir={git_dir}", "-c", f"core.attributesFile={_ATTRIBUTES}", "-c", "core.quotePath=false",
           *args[:1], "-U0", "--no-color", "--no-ext-diff", "--no-renames", f"--format={_SEP_COMMIT}%H", *args[1:], "--"]
    env = {**os.environ, "GIT_NO_LAZY_FETCH": "1"}  # never a network fetch (git >= 2.44 reads it)
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env) as proc:
        assert proc.stdout is not None
        got = parse_diffs(io.TextIOWrapper(proc.stdout, encoding="utf-8", errors="replace", newline="\n"))
        if proc.wait(timeout=_GIT_TIMEOUT_S) != 0:
            raise subprocess.CalledProcessError(proc.returncode, cmd)
    return got


def show_diffs(git_dir: Path, shas: list[str]) -> Diffs:
    """The diffs of the commits ``shas`` (``git show -U0``), parsed. When git cannot show them all (an
    object missing from the repository), each commit it can show on its own."""
    if not shas:
        return {}
    try:
        return _git_diffs(git_dir, ["show", *shas])
    except subprocess.CalledProcessError:
        out: Diffs = {}
        for sha in shas:
            try:
                out.update(_git_diffs(git_dir, ["show", sha]))
            except subprocess.CalledProcessError:
                continue
        return out


def _partial_clone(git_dir: Path) -> bool:
    """True for a partial clone (``--filter``): reading an old diff there fetches blobs over the network."""
    try:
        proc = subprocess.run(["git", f"--git-dir={git_dir}", "config", "--get-regexp",
                               r"^(extensions\.partialclone|remote\..*\.promisor)$"],
                              capture_output=True, timeout=_GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return True
    # "remote.origin.promisor true" (git 2.39 writes this) or "extensions.partialclone origin"
    return any(v.strip().lower() not in ("", "false") for _, _, v in
               (ln.partition(" ") for ln in proc.stdout.decode("utf-8", "replace").splitlines()))


def log_diffs(git_dir: Path, rev: str, max_commits: int = MAX_COMMITS) -> Diffs:
    """The diffs of the commits :func:`run_log` lists (``git log -p -U0``), parsed."""
    return _git_diffs(git_dir, ["log", "--no-merges", f"-n{max_commits}", rev])


def run_log(git_dir: Path, rev: str, max_commits: int = MAX_COMMITS) -> str:
    """The ``git log`` text a :class:`History` is parsed from (``""`` when git cannot read it)."""
    proc = subprocess.run(
        ["git", f"--git-dir={git_dir}", "log", "--no-merges", f"-n{max_commits}", "--no-renames",
         f"--format={_SEP_COMMIT}%H%n%s%n%b{_SEP_FIELD}", "--name-only", rev, "--"],
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
    if _partial_clone(git_dir):
        log.info("history: %s is a partial clone; the line-level signals are off (no blob is fetched)", git_dir)
        return _parse_log(text, None)
    return _parse_log(text, lambda shas: show_diffs(git_dir, shas))


def history_text(git_dir: Path, rev: str, diffs: int = MAX_COMMITS, max_commits: int = MAX_COMMITS) -> str:
    """What a snapshot carries of the history reachable from ``rev``: :func:`run_log`'s text, then
    (after ``_SEP_DIFFS``) the diffs of its newest ``diffs`` commits condensed (:func:`condense_diffs`),
    so the snapshot's line-level and recent-activity features equal the checkout's. ``""``: no
    history there."""
    text = run_log(git_dir, rev, max_commits)
    if not text or diffs <= 0 or _partial_clone(git_dir):
        return text
    try:
        shown = log_diffs(git_dir, rev, min(diffs, max_commits))
    except (OSError, subprocess.SubprocessError) as exc:
        # the snapshot's ranking then lacks the line-level group: said, never silent
        log.warning("history: cannot read the diffs of %s (%s); the snapshot carries the log only", rev, exc)
        return text
    return text + _SEP_DIFFS + condense_diffs(shown)


@lru_cache(maxsize=4)
def history_from_log(text: str) -> History | None:
    """The history in :func:`history_text` (or :func:`run_log`) text (None when it holds no commit); the
    commits' diffs are those the text carries (none in a bare log)."""
    text, _, carried = text.partition(_SEP_DIFFS)
    if not carried:
        return _parse_log(text, None)
    table: Diffs = {}

    def diffs(shas: list[str]) -> Diffs:
        if not table:
            table.update(parse_diffs(carried.split("\n")))
        return {s: table[s] for s in shas if s in table}

    return _parse_log(text, diffs)


def _parse_log(text: str, diffs: Callable[[list[str]], Diffs] | None) -> History | None:
    if not text:
        return None
    messages, touched, shas = [], [], []
    for block in text.split(_SEP_COMMIT)[1:]:
        head, _, names = block.partition(_SEP_FIELD)
        sha, _, msg = head.partition("\n")
        shas.append(sha.strip())
        messages.append(msg)
        touched.append([ln for ln in names.splitlines() if ln.strip()])
    return History(messages, touched, shas, diffs)
