"""Learned chunk ranking: function-level chunks, their features, a LightGBM ranker and a budget allocator.

``chunks`` cuts a repository into the chunk-BM25 baseline's units, ``features``
describes each candidate chunk for a goal (lexical, goal form, structural, size,
git history), ``model`` loads the versioned LightGBM model shipped in this package
(no network) and turns its scores into expected gold lines, ``allocate`` picks per
chunk full / signature / out within a token budget.
"""

from durable_navigator.repomap.chunkrank.allocate import FULL, OUT, SIGNATURE, allocate
from durable_navigator.repomap.chunkrank.chunks import ChunkSpan, RepoChunks, chunk_ranges, tokenize
from durable_navigator.repomap.chunkrank.features import FEATURES, GROUPS, ChunkFeatures, EngineView, chunk_features

__all__ = ["FULL", "OUT", "SIGNATURE", "allocate", "ChunkSpan", "RepoChunks", "chunk_ranges", "tokenize",
           "FEATURES", "GROUPS", "ChunkFeatures", "EngineView", "chunk_features"]
