"""The chunk ranker's features: one row per candidate chunk of a repository for one goal.

Every feature is named (``FEATURES``) and belongs to one group (``GROUPS``), so an
ablation can drop a group and the saved model lists the names it was trained on.
Groups:

* **lexical** -- BM25 of the goal against the chunk (chunk-level idf) and its whole
  file (file-level idf), each raw, relative to the best and as a rank; idf-weighted
  share of the goal's terms the chunk/file contains; goal terms in the definition's
  name and in the path; the goal spelling the definition's name;
* **goal** -- the goal's form: how many terms, names an identifier / a path / error
  text / tests;
* **structural** -- the engine's file ranking (personalised PageRank over the
  definition/reference graph, its lexical, identifier, path and name signals, the
  file's rank); how many files mention the chunk's name; whether the chunk calls a
  definition of the best lexical chunks or is called by them; test/doc file;
* **size** -- lines, the file's lines, position in the file, definition or block;
* **history** -- ``history.HISTORY_FEATURES`` of the chunk's file (0 without ``.git``);
* **history_line** -- ``history.LINE_FEATURES`` of the chunk itself: the hunks of the past commits
  whose messages resemble the goal, at line level (0 without ``.git``);
* **history_recent** -- ``history.RECENT_FEATURES``: whether the newest commits changed the chunk's
  lines and its file, whatever the goal (0 without ``.git``);
* **corpus** -- chunk and file BM25 and coverage with the corpus-wide idf (``corpusidf``: how common
  a term is across the training repositories, not in this one), raw and relative to the best; the
  mean corpus idf of the goal's terms (how specific the goal is);
* **feedback** -- pseudo-relevance feedback: BM25 of the terms the best lexical chunks share beyond
  the goal's own (``_feedback``), per chunk and per file, raw and relative to the best;
* **assoc** -- BM25 of the code terms the goal's words go with in the training corpus's commits
  (``assoc``: "deprecated" -> ``deprecationwarning``, "timeout" -> ``deadline``), per chunk and per
  file, raw and relative to the best;
* **semantic** -- cosine of the goal's and the chunk's (and its file's) embeddings from shipped
  static word vectors (``semantic``), raw and relative to the best candidate.

Candidates: the ``TOP_LEXICAL`` chunks by chunk BM25, every chunk of the
``TOP_FILES`` best files of the engine's ranking (a goal that names no term of a
chunk can still point at its file), and up to ``TOP_GRAPH`` chunks that call or are
called by the best lexical chunks (the code that guards or uses what the goal names
shares no term with it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from durable_navigator.repomap.chunkrank.assoc import GoalAssoc, load_assoc
from durable_navigator.repomap.chunkrank.chunks import ChunkSpan, RepoChunks, tokenize
from durable_navigator.repomap.chunkrank.corpusidf import load_corpus_idf
from durable_navigator.repomap.chunkrank.history import HISTORY_FEATURES, LINE_FEATURES, RECENT_FEATURES, History
from durable_navigator.repomap.chunkrank.lexical import bm25_scores, coverage, lucene_idf, name_match, path_match

__all__ = ["FEATURES", "GROUPS", "ChunkFeatures", "EngineView", "chunk_features", "TOP_LEXICAL", "TOP_FILES", "TOP_GRAPH"]

TOP_LEXICAL = 300
TOP_FILES = 8
TOP_GRAPH = 0
_TOP_SEEDS = 5
GROUPS: dict[str, tuple[str, ...]] = {
    "lexical": ("chunk_bm25", "chunk_bm25_rel", "chunk_bm25_rank", "chunk_cover", "file_bm25", "file_bm25_rel",
                "file_cover", "name_match", "path_match", "exact_name"),
    "goal": ("goal_terms", "goal_ident", "goal_path", "goal_error", "goal_test"),
    "structural": ("eng_score", "eng_rank", "eng_pagerank", "eng_bm25", "eng_ident", "eng_path", "eng_name",
                   "name_refs", "calls_top", "called_by_top", "is_test", "is_doc", "is_data"),
    "size": ("n_lines", "file_lines", "rel_pos", "is_def", "is_class"),
    "history": HISTORY_FEATURES,
    "history_line": LINE_FEATURES,
    "history_recent": RECENT_FEATURES,
    "semantic": ("sem_chunk", "sem_chunk_rel", "sem_file", "sem_file_rel"),
    "corpus": ("chunk_bm25_c", "chunk_bm25_c_rel", "chunk_cover_c", "file_bm25_c", "file_bm25_c_rel", "file_cover_c",
               "goal_cidf"),
    "feedback": ("chunk_prf", "chunk_prf_rel", "file_prf", "file_prf_rel"),
    "assoc": ("chunk_assoc", "chunk_assoc_rel", "file_assoc", "file_assoc_rel"),
}
FEATURES: tuple[str, ...] = tuple(f for names in GROUPS.values() for f in names)
_ERROR = re.compile(r"\b\w*(Error|Exception|Traceback|Panic|panic|crash\w*|fail\w*|raise[sd]?)\b|`[^`]+`|\"[^\"]{8,}\"")
_TEST = re.compile(r"\btest(s|ing)?\b", re.I)
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:_[A-Za-z0-9]+|[a-z][A-Z][A-Za-z0-9]*)\b|\b\w+\(\)")
_PATH = re.compile(r"[\w\-.]+/[\w\-.]+|\b[\w\-]+\.(py|go|rs|js|ts|rb|java|c|h|cpp|md)\b")
_TEST_PATH = re.compile(r"(^|/)(tests?|testing|spec|specs|__tests__)/|(^|/)test_[^/]*$|_test\.\w+$|\.(test|spec)\.\w+$|"
                        r"_spec\.rb$|(^|/)conftest\.py$")
_DOC_PATH = re.compile(r"(^|/)(docs?|examples?)/|\.(md|rst|txt|adoc)$", re.I)
#: data, configuration and generated files: what a change rarely is about, however many goal terms
#: they repeat (fixtures, lock files, recorded results)
_DATA_PATH = re.compile(r"\.(json|jsonl|ya?ml|toml|lock|csv|tsv|xml|svg|ini|cfg|conf|properties|snap|min\.js|map|"
                        r"pbxproj|sum)$|(^|/)(package-lock\.json|yarn\.lock|poetry\.lock|Cargo\.lock|go\.sum)$", re.I)


@dataclass
class EngineView:
    """What the features need of the engine for one goal: its file ranking and signals."""

    score: dict[str, float]
    rank: dict[str, int]
    signals: dict[str, dict[str, float]]


@dataclass
class ChunkFeatures:
    """Candidate chunks (``spans``, indices ``rows`` into ``RepoChunks.spans``) and their feature matrix."""

    spans: list[ChunkSpan]
    rows: np.ndarray
    X: np.ndarray  # float32, candidates x len(FEATURES)
    #: which candidates are of the primary set (None: all); the rest are the fill set's
    primary: np.ndarray | None = None


def _rank_of(v: np.ndarray) -> np.ndarray:
    order = np.argsort(-v, kind="stable")
    r = np.empty(len(v))
    r[order] = np.arange(len(v))
    return r


def _goal_form(goal: str, terms: list[str]) -> dict[str, float]:
    return {"goal_terms": float(len(set(terms))), "goal_ident": float(bool(_IDENT.search(goal))),
            "goal_path": float(bool(_PATH.search(goal))), "goal_error": float(bool(_ERROR.search(goal))),
            "goal_test": float(bool(_TEST.search(goal)))}


def _structure(rc: RepoChunks, lex: np.ndarray) -> dict[str, np.ndarray]:
    """Names in/out: files mentioning a chunk's name; calls into / called by the best lexical chunks."""
    n = len(rc.spans)
    name_col = np.array([rc.vocab.get(s.name.lower(), -1) if len(s.name) > 2 else -1 for s in rc.spans])
    has = name_col >= 0
    file_df = rc.file_df
    refs = np.zeros(n)
    refs[has] = np.log1p(np.maximum(file_df[name_col[has]] - 1, 0))
    top = np.argsort(-lex, kind="stable")[:_TOP_SEEDS]
    top = top[lex[top] > 0]
    calls, called = np.zeros(n), np.zeros(n)
    if len(top):
        top_names = sorted({int(c) for c in name_col[top] if c >= 0})
        if top_names:
            calls = np.asarray((rc.tf[:, top_names] > 0).sum(axis=1)).ravel().astype(np.float64)
            calls[top] = np.maximum(calls[top] - 1, 0)  # a definition names itself
        in_top = np.asarray(rc.tf[top].sum(axis=0)).ravel()
        called[has] = (in_top[name_col[has]] > 0).astype(np.float64)
    return {"name_refs": refs, "calls_top": np.log1p(calls), "called_by_top": called}


def chunk_features(rc: RepoChunks, goal: str, view: EngineView, history: History | None = None,
                   top_lexical: int = TOP_LEXICAL, top_files: int = TOP_FILES,
                   top_graph: int | None = None, semantic: bool = False, line_history: bool = False,
                   corpus: bool = False, feedback: bool = False, assoc: bool = False,
                   assoc_table: GoalAssoc | None = None, recent: bool = False,
                   fill_lexical: int = 0, fill_files: int = 0) -> ChunkFeatures:
    """Features of the candidate chunks of ``rc`` for ``goal`` (see the module docstring).

    ``semantic``: compute the ``semantic`` group (zeros otherwise). Training rows compute it, so a
    model can be trained with or without it; at run time only a model that reads it pays for it
    (:attr:`ChunkRanker.semantic`). ``line_history`` likewise for the ``history_line`` group (one
    ``git show`` of the goal's most similar past commits), ``recent`` for ``history_recent`` (one
    ``git show`` of the newest commits), ``corpus``, ``feedback`` and ``assoc`` for theirs.
    ``assoc_table``: the associations to read instead of the shipped table (a training row's table
    is built without its own repository's commits)."""
    terms = tokenize(goal)
    cols = rc.columns(terms)
    n, nf = len(rc.spans), len(rc.files)
    f: dict[str, np.ndarray] = {}
    lex = bm25_scores(rc.tf, cols)
    f["chunk_bm25"] = lex
    f["chunk_bm25_rel"] = lex / max(float(lex.max()), 1e-9)
    f["chunk_bm25_rank"] = np.log1p(_rank_of(lex))
    f["chunk_cover"] = coverage(rc.tf, cols)
    fl = bm25_scores(rc.file_tf, cols)
    per_file: dict[str, np.ndarray] = {"file_bm25": fl, "file_bm25_rel": fl / max(float(fl.max()), 1e-9),
                                       "file_cover": coverage(rc.file_tf, cols)}
    idf = {t: float(np.log(1.0 + n / (1.0 + rc.chunk_df[c]))) for t in set(terms)
           if (c := rc.vocab.get(t)) is not None}
    f["name_match"] = name_match(rc, terms, idf)
    per_file["path_match"] = path_match(rc, terms, idf)
    words = {w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", goal) if len(w) > 2}
    lower = {w.lower() for w in words}
    f["exact_name"] = np.array([float(s.name in words or (len(s.name) > 3 and s.name.lower() in lower
                                                         and not s.name.islower())) for s in rc.spans])
    for k, v in _goal_form(goal, terms).items():
        f[k] = np.full(n, v)
    sig_names = ("pagerank", "bm25", "ident", "path", "name")
    per_file["eng_score"] = np.array([view.score.get(p, 0.0) for p in rc.files])
    per_file["eng_rank"] = np.log1p([view.rank.get(p, nf) for p in rc.files])
    for s in sig_names:
        per_file[f"eng_{s}"] = np.array([view.signals.get(p, {}).get(s, 0.0) for p in rc.files])
    per_file["is_test"] = np.array([float(bool(_TEST_PATH.search(p))) for p in rc.files])
    per_file["is_doc"] = np.array([float(bool(_DOC_PATH.search(p))) for p in rc.files])
    per_file["is_data"] = np.array([float(bool(_DATA_PATH.search(p))) for p in rc.files])
    seeds = [rc.files[i] for i in np.argsort(-fl, kind="stable")[:3] if fl[i] > 0]
    hist = history.features(rc.files, terms, seeds) if history is not None else {k: np.zeros(nf) for k in HISTORY_FEATURES}
    per_file.update(hist)
    per_file["file_lines"] = np.log1p(rc.file_lines.astype(np.float64))
    f.update(_structure(rc, lex))
    f.update(_corpus(rc, terms, cols) if corpus else {k: np.zeros(n) for k in GROUPS["corpus"]})
    f.update(_feedback(rc, lex, cols) if feedback else {k: np.zeros(n) for k in GROUPS["feedback"]})
    f.update(_assoc(rc, terms, load_assoc() if assoc_table is None else assoc_table) if assoc else {k: np.zeros(n) for k in GROUPS["assoc"]})
    f["n_lines"] = np.log1p((rc.ends - rc.starts + 1).astype(np.float64))
    f["rel_pos"] = (rc.starts - 1) / np.maximum(rc.file_lines[rc.file_of], 1)
    f["is_def"] = np.array([float(bool(s.name)) for s in rc.spans])
    f["is_class"] = np.array([float(s.kind in ("class", "struct", "interface", "module", "impl", "trait"))
                              for s in rc.spans])
    for k, v in per_file.items():
        f[k] = v[rc.file_of]
    rows = _candidates(rc, lex, per_file["eng_score"], top_lexical, top_files)
    graph = TOP_GRAPH if top_graph is None else top_graph
    if graph > 0:
        rows = np.union1d(rows, _graph_candidates(f["calls_top"], f["called_by_top"], f["chunk_bm25"], graph))
    primary = None
    if fill_lexical or fill_files:
        wide = np.union1d(rows, _candidates(rc, lex, per_file["eng_score"], fill_lexical, fill_files))
        primary, rows = np.isin(wide, rows), wide
    f.update(_semantic(rc, terms, rows) if semantic else {k: np.zeros(n) for k in GROUPS["semantic"]})
    f.update(history.line_features(rc, rows, terms) if line_history and history is not None
             else {k: np.zeros(n) for k in LINE_FEATURES})
    f.update(history.recent_features(rc, rows) if recent and history is not None
             else {k: np.zeros(n) for k in RECENT_FEATURES})
    X = np.column_stack([f[name][rows] for name in FEATURES]).astype(np.float32)
    return ChunkFeatures([rc.spans[i] for i in rows], rows, X, primary)


#: pseudo-relevance feedback: the best lexical chunks read, and the expansion terms taken from them
PRF_DOCS = 10
PRF_TERMS = 12


def _feedback(rc: RepoChunks, lex: np.ndarray, cols: list[int]) -> dict[str, np.ndarray]:
    """The ``feedback`` group: BM25 of the goal's expansion terms (RM-style pseudo-relevance feedback).

    The ``PRF_DOCS`` best chunks by chunk BM25 vote for their terms (each chunk's term shares
    weighted by its score), a vote times the term's idf ranks the terms, and the ``PRF_TERMS`` best
    that the goal does not say score every chunk and file by BM25 with their idf scaled by their
    vote (the best term 1). A goal that says "rate limit" reaches the ``throttle`` code that the
    limiter's own chunks call; a goal no chunk matches gets zeros."""
    n = len(rc.spans)
    zeros = {k: np.zeros(n) for k in GROUPS["feedback"]}
    top = np.argsort(-lex, kind="stable")[:PRF_DOCS]
    top = top[lex[top] > 0]
    if len(top) == 0:
        return zeros
    sub = rc.tf[top].astype(np.float64)
    lengths = np.maximum(np.asarray(sub.sum(axis=1)).ravel(), 1.0)
    w = lex[top] / lex[top].sum() / lengths
    vote = np.asarray(sub.multiply(w[:, None]).sum(axis=0)).ravel()
    cand = np.flatnonzero(vote)
    cand = cand[~np.isin(cand, cols)]
    if len(cand) == 0:
        return zeros
    idf = lucene_idf(rc.chunk_df[cand], n)
    weight = vote[cand] * idf
    best = np.argsort(-weight, kind="stable")[:PRF_TERMS]
    return _expansion_scores(rc, cand[best], weight[best] / weight[best].max(), GROUPS["feedback"])


def _expansion_scores(rc: RepoChunks, cols: np.ndarray, scale: np.ndarray,
                      names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """BM25 of expansion terms ``cols`` (each idf scaled by ``scale``) per chunk and per file, raw and
    relative to the best: ``names`` = (chunk, chunk relative, file, file relative)."""
    n, nf = len(rc.spans), len(rc.files)
    c = bm25_scores(rc.tf, cols.tolist(), lucene_idf(rc.chunk_df[cols], n) * scale)
    fl = bm25_scores(rc.file_tf, cols.tolist(), lucene_idf(rc.file_df[cols], nf) * scale)
    chunk, chunk_rel, file, file_rel = names
    return {chunk: c, chunk_rel: c / max(float(c.max()), 1e-9),
            file: fl[rc.file_of], file_rel: (fl / max(float(fl.max()), 1e-9))[rc.file_of]}


#: the goal's associated code terms (``assoc``) that score chunks and files
ASSOC_TERMS = 20


def _assoc(rc: RepoChunks, terms: list[str], table: GoalAssoc) -> dict[str, np.ndarray]:
    """The ``assoc`` group: BM25 of the code terms the goal's words are associated with across the
    training corpus's commits (``assoc.GoalAssoc.expansion``), the ``ASSOC_TERMS`` best the
    repository holds, each term's idf scaled by its summed weight (the best term 1)."""
    got = [(w, c) for t, w in table.expansion(terms).items() if (c := rc.vocab.get(t)) is not None]
    if not got:
        return {k: np.zeros(len(rc.spans)) for k in GROUPS["assoc"]}
    got = sorted(got, key=lambda x: (-x[0], x[1]))[:ASSOC_TERMS]
    cols = np.array([c for _, c in got], dtype=np.int64)
    return _expansion_scores(rc, cols, np.array([w for w, _ in got]) / got[0][0], GROUPS["assoc"])


def _corpus(rc: RepoChunks, terms: list[str], cols: list[int]) -> dict[str, np.ndarray]:
    """The ``corpus`` group: lexical scores with the corpus-wide idf (``corpusidf``)."""
    table = load_corpus_idf()
    names = [t for t in dict.fromkeys(terms) if t in rc.vocab]  # ``cols``' terms, in its order
    cidf, fidf = table.chunk_idf(names), table.file_idf(names)
    c = bm25_scores(rc.tf, cols, cidf)
    fl = bm25_scores(rc.file_tf, cols, fidf)
    goal = table.chunk_idf(list(dict.fromkeys(terms)))
    n = len(rc.spans)
    return {"chunk_bm25_c": c, "chunk_bm25_c_rel": c / max(float(c.max()), 1e-9),
            "chunk_cover_c": coverage(rc.tf, cols, cidf),
            "file_bm25_c": fl[rc.file_of], "file_bm25_c_rel": (fl / max(float(fl.max()), 1e-9))[rc.file_of],
            "file_cover_c": coverage(rc.file_tf, cols, fidf)[rc.file_of],
            "goal_cidf": np.full(n, float(goal.mean()) if len(goal) else 0.0)}


def _semantic(rc: RepoChunks, terms: list[str], rows: np.ndarray) -> dict[str, np.ndarray]:
    """Cosine of the goal's embedding with each candidate chunk's and its file's (``semantic``),
    raw and minus the best candidate's; zero where there is nothing to compare."""
    from durable_navigator.repomap.chunkrank.semantic import bag_vectors, goal_vector

    n = len(rc.spans)
    out = {k: np.zeros(n) for k in GROUPS["semantic"]}
    if len(rows) == 0 or not terms:
        return out
    vocab_terms = rc.__dict__.get("_vocab_terms")
    if vocab_terms is None:
        vocab_terms = rc.__dict__["_vocab_terms"] = list(rc.vocab)
    idf = np.log(1.0 + n / (1.0 + rc.chunk_df.astype(np.float64)))
    default = float(np.log(1.0 + n))
    g = goal_vector(terms, {t: float(idf[c]) for t in terms if (c := rc.vocab.get(t)) is not None}, default)
    chunk = bag_vectors(rc.tf[rows], vocab_terms, idf) @ g
    files = np.unique(rc.file_of[rows])
    per_file = np.zeros(len(rc.files))
    per_file[files] = bag_vectors(rc.file_tf[files], vocab_terms, idf) @ g
    out["sem_chunk"][rows] = chunk
    out["sem_chunk_rel"][rows] = chunk - float(chunk.max())
    out["sem_file"] = per_file[rc.file_of]
    out["sem_file_rel"][rows] = out["sem_file"][rows] - float(out["sem_file"][rows].max())
    return out


def _candidates(rc: RepoChunks, lex: np.ndarray, file_score: np.ndarray, top_lexical: int,
                top_files: int) -> np.ndarray:
    """The best ``top_lexical`` chunks by BM25 (score > 0) plus every chunk of the best ``top_files`` files."""
    best = np.argsort(-lex, kind="stable")[:top_lexical]
    best = best[lex[best] > 0]
    files = np.argsort(-file_score, kind="stable")[:top_files]
    files = files[file_score[files] > 0]
    extra = np.flatnonzero(np.isin(rc.file_of, files))
    return np.unique(np.concatenate([best, extra])).astype(np.int64)


def _graph_candidates(calls: np.ndarray, called: np.ndarray, lex: np.ndarray, limit: int) -> np.ndarray:
    """Up to ``limit`` chunks linked to the best lexical chunks, the most linked (then the most lexical) first."""
    linked = np.flatnonzero((calls > 0) | (called > 0))
    if len(linked) == 0:
        return linked.astype(np.int64)
    order = np.lexsort((-lex[linked], -(calls[linked] + called[linked])))
    return linked[order[:limit]].astype(np.int64)
