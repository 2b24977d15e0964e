"""An evaluation task's goal from its commit message: what the commit says, not where.

Trailers, PR references, URLs and every changed path, file name and module/import name are removed;
with ``extended`` redaction also ``scope:`` subject prefixes, ``a::b`` / ``a/b`` module paths and the
bookkeeping some histories carry, and a long goal is cut at a sentence or line end. One copy for
``navigator eval`` and the benchmarks (``bench/taskset.py`` imports it). Pure: safe anywhere.
"""

from __future__ import annotations

import re

__all__ = ["redact_goal"]

_TRAILER = re.compile(
    r"^((co-authored-by|signed-off-by|reviewed-by):.*|(closes|fixes|fix|refs?) #\d+.*|.*pre-commit\.ci.*|-{3,})$",
    re.I | re.M,
)
_PR_REF = re.compile(r"\(?(gh-|#)\d+\)?|https?://\S+")
#: bookkeeping some histories carry (rack's darcs import, jinja's hg/svn import, autosquash
#: leftovers); extended redaction only
_BOOKKEEPING = re.compile(
    r"darcs-hash:\S+|git-svn-id:\s*\S+(\s+[0-9a-f-]{36})?|--HG--\s*branch\s*:\s*\S+|^\[svn\]\s*|\bfixup!"
    # Google's export tooling (guice, gson): MOE revision stamps and Piper ids
    r"|Revision created by MOE tool \S+\.?|MOE_MIGRAT\w*=\S*|Created by MOE:?|PiperOrigin-RevId:\s*\d+",
    re.I | re.M,
)
_SOURCE_ROOTS = ("src/", "lib/", "source/", "crates/")


def _module_names(path: str, extended: bool) -> set[str]:
    """Every spelling of ``path`` that names the file or its module."""
    names = {path, path.rsplit("/", 1)[-1]}
    stem_path = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    if path.endswith(".py"):
        module = path[:-3].replace("/", ".")
        names.add(module)
        for prefix in ("src.", "lib."):
            if module.startswith(prefix):
                names.add(module[len(prefix):])
    if extended:
        forms = {stem_path}
        for root in _SOURCE_ROOTS:
            if stem_path.startswith(root):
                forms.add(stem_path[len(root):])
        for form in list(forms):
            if form.endswith(("/index", "/mod", "/lib", "/__init__")):
                forms.add(form.rsplit("/", 1)[0])
        for form in forms:
            if "/" in form:  # an import path: rack/utils, middleware/compress, buf/buf_mut
                names.add(form)
                names.add(form.replace("/", "::"))
                if path.endswith(".py"):
                    names.add(form.replace("/", "."))
    return names


def _scope_words(paths: list[str]) -> set[str]:
    """Directory and file-stem names of the changed files (what a ``scope:`` prefix names)."""
    words: set[str] = set()
    for path in paths:
        parts = path.split("/")
        words.update(p.lower() for p in parts[:-1] if p)
        words.add(parts[-1].rsplit(".", 1)[0].lower())
    return words - {"src", "lib", "source", "crates", "internal"}


_CONVENTIONAL = re.compile(r"^(\w+)\(([^)]*)\)(!?):")
_SCOPE_PREFIX = re.compile(r"^([\w.\-]+(?:\s*[,/]\s*[\w.\-]+)*):\s+")


def _names_changed(scope: str, scopes: set[str]) -> bool:
    parts = [p.strip().lower() for p in re.split(r"[,/]", scope)]
    return all(p in scopes for p in parts)


def _strip_scope(text: str, scopes: set[str]) -> str:
    """``printer: fix x`` -> ``fix x``; ``fix(middleware): x`` -> ``fix: x`` when the scope names a changed file."""
    subject, sep, body = text.partition("\n")
    m = _CONVENTIONAL.match(subject)
    if m:
        if _names_changed(m.group(2), scopes):
            subject = f"{m.group(1)}{m.group(3)}:" + subject[m.end():]
    elif (m := _SCOPE_PREFIX.match(subject)) and _names_changed(m.group(1), scopes):
        subject = subject[m.end():]
    return subject + sep + body


def _cut(text: str, limit: int) -> str:
    if not limit or len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("\n"))
    return cut[: end + 1] if end > limit // 2 else cut


def redact_goal(message: str, changed: list[str], extended: bool = False, max_chars: int = 0,
                extra_trailers: str = "") -> str:
    """Commit message -> goal: trailers, PR refs, URLs and changed paths/names removed."""
    text = _TRAILER.sub("", message)
    if extra_trailers:
        text = re.sub(extra_trailers, "", text, flags=re.I | re.M)
    text = _PR_REF.sub("", text)
    if extended:
        text = _BOOKKEEPING.sub("", text)
        text = _strip_scope(text.strip(), _scope_words(changed))
    names: set[str] = set()
    for path in changed:
        names |= _module_names(path, extended)
    for name in sorted(names, key=len, reverse=True):
        pattern = r"`?" + re.escape(name) + r"`?"
        if extended:  # whole names only: `lib/response` must not eat `lib/responses`
            pattern = r"(?<![\w/.:])" + pattern + r"(?![\w/])"
        text = re.sub(pattern, " ", text)
    if extended:
        text = _cut(text, max_chars)
    return " ".join(text.split())
