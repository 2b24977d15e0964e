"""Tree-sitter front end: the official ``tree-sitter-<lang>`` wheels and their ``tags.scm``.

Each language's parser and tags query are built once per process
(``functools.cache``); definitions become symbols whose signature is the
definition's text up to its body. References are counted language-agnostically
by the indexer, so only definition captures matter here.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from durable_navigator.repomap.parsed import ParsedFile, SymbolDraft

__all__ = ["TS_LANGUAGES", "language_for", "parse_treesitter", "tags_query_version"]


@dataclass(frozen=True)
class _LangSpec:
    module: str
    factory: str
    #: tags.scm files concatenated, as (module, relative path); TypeScript extends JavaScript
    tags: tuple[tuple[str, str], ...]


TS_LANGUAGES: dict[str, _LangSpec] = {
    "javascript": _LangSpec("tree_sitter_javascript", "language", (("tree_sitter_javascript", "queries/tags.scm"),)),
    "typescript": _LangSpec("tree_sitter_typescript", "language_typescript",
                            (("tree_sitter_javascript", "queries/tags.scm"), ("tree_sitter_typescript", "queries/tags.scm"))),
    "tsx": _LangSpec("tree_sitter_typescript", "language_tsx",
                     (("tree_sitter_javascript", "queries/tags.scm"), ("tree_sitter_typescript", "queries/tags.scm"))),
    "go": _LangSpec("tree_sitter_go", "language", (("tree_sitter_go", "queries/tags.scm"),)),
    "rust": _LangSpec("tree_sitter_rust", "language", (("tree_sitter_rust", "queries/tags.scm"),)),
    "java": _LangSpec("tree_sitter_java", "language", (("tree_sitter_java", "queries/tags.scm"),)),
    "c": _LangSpec("tree_sitter_c", "language", (("tree_sitter_c", "queries/tags.scm"),)),
    "cpp": _LangSpec("tree_sitter_cpp", "language",
                     (("tree_sitter_c", "queries/tags.scm"), ("tree_sitter_cpp", "queries/tags.scm"))),
    "ruby": _LangSpec("tree_sitter_ruby", "language", (("tree_sitter_ruby", "queries/tags.scm"),)),
}

_EXTENSIONS = {
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".rb": "ruby",
}
_MAX_SIG_CHARS = 200
_COMMENT_LINE = re.compile(r"^\s*(//|/\*|\*|#(?!include|define|if|endif|pragma|\[))")
_BODY_FIELDS = ("body", "declaration_list", "field_declaration_list")
_DECL_PARENTS = ("function_definition", "declaration", "field_declaration")


def language_for(path: str) -> str | None:
    """The tree-sitter language key for a path, or None when unsupported."""
    suffix = Path(path).suffix.lower()
    return _EXTENSIONS.get(suffix)


def _read_tags(module: str, rel: str) -> str:
    # located, not imported: importing a grammar package loads its compiled parser, which
    # a warm open (that only needs the query digest for its cache key) never uses
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"tree-sitter grammar package {module!r} is not installed")
    return (Path(next(iter(spec.submodule_search_locations))) / rel).read_text(encoding="utf-8")


@functools.cache
def _parser_and_query(lang: str) -> tuple[Any, Any]:
    import tree_sitter as ts

    spec = TS_LANGUAGES[lang]
    language = ts.Language(getattr(importlib.import_module(spec.module), spec.factory)())
    source = "\n".join(_read_tags(m, r) for m, r in spec.tags)
    return ts.Parser(language), ts.Query(language, source)


@functools.cache
def tags_query_version() -> str:
    """A digest of every shipped tags.scm (part of the cache key: new queries re-index)."""
    import hashlib

    h = hashlib.blake2b(digest_size=8)
    for spec in TS_LANGUAGES.values():
        for m, r in spec.tags:
            h.update(_read_tags(m, r).encode())
    return h.hexdigest()


def parse_treesitter(lang: str, data: bytes, text_lines: list[str]) -> ParsedFile:
    """Definitions of one file through its language's tags query."""
    import tree_sitter as ts

    parser, query = _parser_and_query(lang)
    tree = parser.parse(data)
    found: dict[tuple[int, int], tuple[Any, str, str]] = {}
    for _pattern, caps in ts.QueryCursor(query).matches(tree.root_node):
        for cap, nodes in caps.items():
            if cap.startswith("definition.") and "name" in caps:
                node, name = nodes[0], caps["name"][0]
                key = (node.start_byte, node.end_byte)
                if key not in found:
                    text = name.text.decode("utf-8", "replace") if name.text else "?"
                    found[key] = (node, text, cap.split(".", 1)[1])
    out = ParsedFile()
    if tree.root_node.has_error and not found:
        out.error = f"{lang} parse error"
    _build_symbols(sorted(found.items(), key=lambda kv: (kv[0][0], -kv[0][1])), data, text_lines, out)
    return out


def _build_symbols(items: list[tuple[tuple[int, int], tuple[Any, str, str]]], data: bytes,
                   lines: list[str], out: ParsedFile) -> None:
    stack: list[tuple[int, str]] = []  # (end_byte, qualname) of enclosing definitions
    last: SymbolDraft | None = None
    for (start_b, end_b), (node, name, kind) in items:
        while stack and stack[-1][0] < end_b:
            stack.pop()
        start, end = node.start_point[0] + 1, node.end_point[0] + 1
        if last is not None and stack and stack[-1][1] == last.qualname and (last.name, last.start, last.end) == (name, start, end):
            # one definition tagged twice: ``res.send = function send() {...}`` is an assignment and
            # the function expression it holds, both named ``send``, on the same lines
            continue
        qual = f"{stack[-1][1]}.{name}" if stack else name
        sig, sig_end = _signature(node, data, start)
        sym = SymbolDraft(qualname=qual, name=name, kind=kind, start=start, end=end,
                          sig_start=start, sig_end=sig_end, signature=sig, depth=len(stack))
        _attach_doc(sym, lines)
        out.symbols.append(sym)
        stack.append((end_b, qual))
        last = sym


def _signature(node: Any, data: bytes, start_line: int) -> tuple[str, int]:
    """Definition text up to its body (first line when there is no body field)."""
    node = _declaration_of(node)
    body = None
    for field in _BODY_FIELDS:
        body = node.child_by_field_name(field)
        if body is not None:
            break
    stop = body.start_byte if body is not None and body.start_byte > node.start_byte else None
    if stop is None:
        nl = data.find(b"\n", node.start_byte)
        stop = node.end_byte if nl < 0 or nl > node.end_byte else nl
    raw = data[node.start_byte:stop].decode("utf-8", "replace")
    sig = " ".join(raw.split()).rstrip("{").rstrip()
    if len(sig) > _MAX_SIG_CHARS:
        sig = sig[:_MAX_SIG_CHARS] + " ..."
    return sig or "?", start_line + raw.count("\n")


def _declaration_of(node: Any) -> Any:
    """C/C++ tags point at the declarator; the signature starts at the declaration (return type)."""
    if not node.type.endswith("declarator"):
        return node
    cur = node
    while cur.parent is not None and (cur.parent.type.endswith("declarator")
                                      or cur.parent.type in _DECL_PARENTS):
        cur = cur.parent
        if cur.type in _DECL_PARENTS:
            return cur
    return node


def _attach_doc(sym: SymbolDraft, lines: list[str]) -> None:
    """The contiguous comment block right above a definition is its doc."""
    i = sym.start - 2
    end = i
    while i >= 0 and _COMMENT_LINE.match(lines[i]):
        i -= 1
    if i < end:
        block = [ln.strip() for ln in lines[i + 1:end + 1]]
        sym.doc = "\n".join(block)
        sym.doc_start, sym.doc_end = i + 2, end + 1
