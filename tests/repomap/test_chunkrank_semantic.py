"""The chunk ranker's semantic signal: shipped word vectors, loaded offline, on term bags."""

from __future__ import annotations

import socket

import numpy as np
import pytest
import scipy.sparse as sp

from durable_navigator.repomap.chunkrank import FEATURES, EngineView, RepoChunks, chunk_features
from durable_navigator.repomap.chunkrank import semantic


def test_the_word_vectors_load_from_the_installed_package_with_the_network_refused(monkeypatch) -> None:
    """The model ships in the wheel: loading it opens no connection (a download would be refused)."""
    def refuse(*_a, **_k):
        raise AssertionError("the semantic model tried to reach the network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    semantic._model.cache_clear()
    semantic._memo.clear()
    try:
        vecs = semantic.term_vectors(["budget", "ledger", "parser"])
    finally:
        semantic._model.cache_clear()
    assert vecs.shape == (3, semantic.DIM) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_a_bag_is_nearer_a_goal_that_shares_its_meaning_than_one_that_shares_nothing() -> None:
    terms = ["budget", "cost", "ledger", "reserve", "json", "parse", "token", "string"]
    tf = sp.csr_matrix(np.array([[0, 2, 3, 2, 0, 0, 0, 0],    # the money chunk, without the word "budget"
                                 [0, 0, 0, 0, 3, 2, 1, 2]],   # a parser
                                dtype=np.float32))
    idf = np.ones(len(terms))
    bags = semantic.bag_vectors(tf, terms, idf)
    goal = semantic.goal_vector(["enforce", "usd", "budget"], {"budget": 1.0}, 2.0)
    money, parser = bags @ goal
    assert money > parser
    assert semantic.bag_vectors(sp.csr_matrix((1, len(terms)), dtype=np.float32), terms, idf).any() == False  # noqa: E712
    assert not semantic.goal_vector([], {}, 1.0).any()


def test_candidates_get_semantic_and_data_file_features() -> None:
    files = ["pkg/ledger.py", "pkg/fixtures.json", "pkg/parse.py"]
    lines = {"pkg/ledger.py": ["class Ledger:", "    def reserve(self, cost):", "        self.left -= cost"],
             "pkg/fixtures.json": ['{"budget": 1, "ledger": "x"}'],
             "pkg/parse.py": ["def parse(text):", "    return text.split()"]}
    symbols = {"pkg/ledger.py": [(1, 3, "Ledger", "class")], "pkg/parse.py": [(1, 2, "parse", "function")]}
    rc = RepoChunks(files, lines, symbols)
    view = EngineView({f: 1.0 for f in files}, {f: i for i, f in enumerate(files)}, {})
    cf = chunk_features(rc, "how is the budget ledger cost enforced", view, semantic=True)
    col = FEATURES.index
    row = {s.path: cf.X[i] for i, s in enumerate(cf.spans)}
    assert row["pkg/fixtures.json"][col("is_data")] == 1.0 and row["pkg/ledger.py"][col("is_data")] == 0.0
    assert row["pkg/ledger.py"][col("sem_chunk")] > row["pkg/parse.py"][col("sem_chunk")]
    assert max(r[col("sem_chunk_rel")] for r in row.values()) == pytest.approx(0.0)
    assert all(r[col("sem_chunk_rel")] <= 1e-6 for r in row.values())
    assert row["pkg/ledger.py"][col("sem_file")] == pytest.approx(row["pkg/ledger.py"][col("sem_chunk")], abs=1e-5)


def test_a_blob_that_is_no_word_gets_the_zero_vector_and_costs_no_padding() -> None:
    """A minified or base64 "term" of 200 kB next to words: a batch pads to its longest text, so
    embedding it would take gigabytes (a training run was killed for it); it is no word anyway."""
    blob = "A" * 200_000
    vecs = semantic.term_vectors(["ledger", blob, "budget"])
    assert not vecs[1].any() and vecs[0].any() and vecs[2].any()


def test_the_semantic_group_is_computed_only_when_asked() -> None:
    """At run time a model that does not read the group pays nothing for it (zeros in its columns)."""
    rc = RepoChunks(["a.py"], {"a.py": ["def reserve(cost):", "    return cost"]}, {"a.py": [(1, 2, "reserve", "function")]})
    view = EngineView({"a.py": 1.0}, {"a.py": 0}, {})
    off = chunk_features(rc, "reserve the budget", view)
    on = chunk_features(rc, "reserve the budget", view, semantic=True)
    cols = [FEATURES.index(f) for f in ("sem_chunk", "sem_file")]
    assert not off.X[:, cols].any() and on.X[:, cols].all()
