"""Text helpers of the offline policy: goal terms and user-feedback parsing.

Pure and deterministic (stdlib only), so the same goal and feedback always give
the same terms and the same steering.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from durable_navigator.repomap.stopwords import STOPWORDS as ENGINE_STOPWORDS

__all__ = [
    "STOPWORDS",
    "NOISE_AREAS",
    "TEST_FILE_NAMES",
    "TEST_WORDS",
    "META_FILE_NAMES",
    "split_identifier",
    "goal_terms",
    "mentioned_noise",
    "wants_tests",
    "FeedbackIntent",
    "parse_feedback",
]

#: English and commit-message filler: the engine's list, so both ignore the same words
STOPWORDS = ENGINE_STOPWORDS

#: areas a goal rarely wants unless it says so: (glob, words that re-enable it)
NOISE_AREAS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tests/**", ("test", "tests", "testing", "pytest", "fixture", "fixtures")),
    ("test/**", ("test", "tests", "testing")),
    ("**/tests/**", ("test", "tests", "testing")),
    ("docs/**", ("doc", "docs", "documentation", "sphinx", "readme")),
    ("doc/**", ("doc", "docs", "documentation")),
    ("docs_src/**", ("doc", "docs", "documentation", "example", "examples", "tutorial")),
    ("examples/**", ("example", "examples", "demo", "sample")),
    ("benchmarks/**", ("benchmark", "benchmarks", "bench", "performance", "perf")),
    ("bench/**", ("benchmark", "benchmarks", "bench")),
    ("vendor/**", ("vendor", "vendored", "vendoring")),
    ("**/_vendor/**", ("vendor", "vendored", "vendoring")),
    ("third_party/**", ("third", "vendor", "vendored")),
    ("node_modules/**", ("node", "npm")),
    (".github/**", ("ci", "github", "workflow", "actions")),
)

#: words of a goal that ask for tests (they keep test folders and test files in view)
TEST_WORDS: tuple[str, ...] = ("test", "tests", "testing", "pytest", "fixture", "fixtures", "spec", "specs")

#: test files that live beside the code they test, by file name (``cobra_test.go``,
#: ``tests.py``, ``context.test.js``): as much noise for a goal that does not ask for tests
#: as a ``tests/`` folder. Shell-style patterns over the file name.
TEST_FILE_NAMES: tuple[str, ...] = (
    "tests.py", "test_*.py", "*_test.py", "*_tests.py", "conftest.py", "*_test.go", "*.test.js", "*.test.ts",
    "*.test.jsx", "*.test.tsx", "*.test.mjs", "*.spec.js", "*.spec.ts", "*.spec.jsx", "*.spec.tsx",
    "*_spec.rb", "*_test.rb", "test_*.rb", "*Test.java", "*Tests.java", "*_test.cc", "*_test.cpp",
    "*_unittest.cc",
)

#: project bookkeeping a code goal rarely wants, by file name: licences, changelogs and release
#: notes (they repeat a commit's words without its code), VCS and CI settings; (pattern, words
#: of a goal that keep it)
META_FILE_NAMES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("LICENSE*", ("license", "licence", "licensing", "copyright")),
    ("LICENCE*", ("license", "licence", "licensing", "copyright")),
    ("COPYING*", ("license", "licence", "copying", "copyright")),
    ("CHANGES*", ("changelog", "changes", "release", "releases", "news")),
    ("CHANGELOG*", ("changelog", "changes", "release", "releases", "news")),
    ("HISTORY*", ("changelog", "history", "release", "releases", "news")),
    ("NEWS*", ("changelog", "news", "release", "releases")),
    (".gitignore", ("gitignore", "ignore", "ignored", "git")),
    (".mailmap", ("mailmap", "authors")),
    (".travis.yml", ("travis", "ci")),
)

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: camel-case parts; an acronym's plural is the acronym (``URLs`` -> ``url``; not ``ur``, ``ls``)
_CAMEL = re.compile(r"[A-Z]{2,}(?=s(?![a-z]))|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def split_identifier(word: str) -> list[str]:
    """``TimedSerializer`` / ``load_payload`` -> lower-case parts (>= 2 chars)."""
    parts: list[str] = []
    for chunk in word.split("_"):
        parts.extend(p.lower() for p in _CAMEL.findall(chunk))
    return [p for p in parts if len(p) >= 2]


def goal_terms(text: str) -> list[str]:
    """Distinct content terms of ``text`` in first-seen order.

    Identifiers count both whole (``load_payload``) and split (``load``,
    ``payload``), because code matches either form.
    """
    seen: dict[str, None] = {}
    for word in _WORD.findall(text):
        whole = word.lower().strip("_")
        candidates = [whole] if ("_" in word or word != word.lower()) else []
        candidates += split_identifier(word)
        for term in candidates:
            if len(term) >= 2 and term not in STOPWORDS:
                seen.setdefault(term, None)
    return list(seen)


def mentioned_noise(goal: str) -> set[str]:
    """Noise globs the goal itself asks for (e.g. "tests" in the goal keeps tests/**)."""
    words = {w.lower() for w in _WORD.findall(goal)}
    return {glob for glob, triggers in NOISE_AREAS if words.intersection(triggers)}


def wants_tests(goal: str) -> bool:
    """True when the goal asks for tests ("fix the flaky test", "add specs")."""
    return any(w.lower() in TEST_WORDS for w in _WORD.findall(goal))


_LESS = re.compile(r"\b(zoom(ed)? out|less|fewer|smaller|shorter|too (much|long|big|verbose)|coarser)\b", re.I)
_MORE = re.compile(r"\b(zoom(ed)? in|more detail|deeper|expand|show (me )?(more|the code)|full source)\b", re.I)
_DONE = re.compile(r"\b(finali[sz]e|done|good enough|that'?s it|stop)\b", re.I)
_IGNORE = re.compile(r"\b(?:ignore|exclude|skip|drop|hide|not)\s+([\w./*-]+)", re.I)
_TOKEN = re.compile(r"[\w./*-]+")


@dataclass(frozen=True)
class FeedbackIntent:
    """What a human's free-text feedback asks for, read deterministically."""

    less: bool = False
    more: bool = False
    finalize: bool = False
    #: words that look like paths, globs or symbol names to focus
    mentions: tuple[str, ...] = ()
    #: words after "ignore/exclude/skip/drop/hide/not"
    ignores: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)


def parse_feedback(text: str | None) -> FeedbackIntent:
    """Read feedback: zoom direction words, finalize words, mentioned and ignored names.

    Mentions are every token with a path separator, a dot, an underscore or a
    CamelCase hump; the policy then keeps only those that exist in the
    repository (as a path, a directory or a symbol).
    """
    if not text or not text.strip():
        return FeedbackIntent()
    ignores = tuple(dict.fromkeys(m.group(1).strip("./") for m in _IGNORE.finditer(text)))
    mentions: dict[str, None] = {}
    for tok in _TOKEN.findall(text):
        tok = tok.strip(".,;:")
        if not tok or tok in ignores:
            continue
        if "/" in tok or "." in tok or "_" in tok or re.search(r"[a-z][A-Z]", tok) or tok[:1].isupper():
            mentions.setdefault(tok, None)
    return FeedbackIntent(
        less=bool(_LESS.search(text)),
        more=bool(_MORE.search(text)),
        finalize=bool(_DONE.search(text)),
        mentions=tuple(mentions),
        ignores=ignores,
    )
