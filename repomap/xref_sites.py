"""Code occurrences of a name in one file: never in a string, docstring or comment.

* Python: the stdlib ``tokenize`` — a ``NAME`` token is code by construction
  (strings, docstrings and comments are other token types).
* The tree-sitter languages: the leaf at each textual match must be an identifier
  node (``identifier``, ``field_identifier``, ``property_identifier``,
  ``type_identifier``, Ruby's ``constant`` …); comment and string contents are
  other node types.

Each occurrence carries its qualifier (the text before ``.``, ``::`` or ``->``),
whether it is a call, an import or another reference, and whether it is itself a
definition's name (then it is no reference at all).
"""

from __future__ import annotations

import bisect
import io
import re
import token
import tokenize
from dataclasses import dataclass
from typing import Any

from durable_navigator.repomap.parse_treesitter import language_for

__all__ = ["Occurrence", "occurrences", "is_python"]

_TS_NAME_TYPES = frozenset({
    "identifier", "field_identifier", "property_identifier", "type_identifier", "constant",
    "shorthand_property_identifier", "shorthand_property_identifier_pattern", "package_identifier",
    "namespace_identifier", "private_property_identifier", "simple_identifier",
})
_TS_SEPARATORS = frozenset({".", "::", "->", "&.", "?."})
#: node types whose ``name`` field is a definition's name (never a reference)
_TS_DEF_HINTS = ("definition", "declaration", "declarator", "_item", "_spec", "method", "class", "module",
                 "function", "signature")
_TS_IMPORT_HINTS = ("import", "use_declaration", "use_list", "scoped_use_list", "preproc_include")
_PY_DEF_KEYWORDS = frozenset({"def", "class"})


@dataclass(frozen=True, slots=True)
class Occurrence:
    """A code occurrence: 1-based line, 0-based column; ``definition`` when it names a definition."""

    line: int
    column: int
    qualifier: str | None
    kind: str  # call | import | ref
    definition: bool
    #: the separator before the name: "." (a value or a module), "::" (a path: module, type, namespace)
    sep: str = ""


def is_python(path: str) -> bool:
    """Python source (handled by ``tokenize`` and jedi)."""
    return path.endswith((".py", ".pyi"))


def occurrences(path: str, text: str, name: str) -> list[Occurrence]:
    """Code occurrences of ``name`` in ``text`` (empty for a language without a parser)."""
    if name not in text:
        return []
    if is_python(path):
        return _python(text, name)
    lang = language_for(path)
    return _treesitter(lang, text, name) if lang else []


def _python(text: str, name: str) -> list[Occurrence]:
    out: list[Occurrence] = []
    prev: list[tokenize.TokenInfo] = []
    statement_head = ""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return out
    for i, tok in enumerate(tokens):
        if tok.type in (token.NEWLINE, token.INDENT, token.DEDENT):
            statement_head = ""
            continue
        if tok.type in (token.NL, token.COMMENT):
            continue
        if not statement_head and tok.type == token.NAME:
            statement_head = tok.string
        if tok.type == token.NAME and tok.string == name:
            last = prev[-1] if prev else None
            qual = None
            if last is not None and last.string == "." and len(prev) > 1 and prev[-2].type == token.NAME:
                qual = prev[-2].string
            elif last is not None and last.string == ".":
                qual = "?"
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            definition = last is not None and last.string in _PY_DEF_KEYWORDS
            if statement_head in ("import", "from"):
                kind = "import"
            elif nxt is not None and nxt.string == "(":
                kind = "call"
            else:
                kind = "ref"
            out.append(Occurrence(tok.start[0], tok.start[1], qual, kind, definition, "." if qual else ""))
        prev.append(tok)
        if len(prev) > 2:
            prev.pop(0)
    return out


def _treesitter(lang: str, text: str, name: str) -> list[Occurrence]:
    from durable_navigator.repomap.parse_treesitter import _parser_and_query

    parser, _ = _parser_and_query(lang)
    data = text.encode("utf-8")
    tree = parser.parse(data)
    out: list[Occurrence] = []
    word = re.compile(rb"(?<![A-Za-z0-9_$])" + re.escape(name.encode()) + rb"(?![A-Za-z0-9_$?!])")
    line_starts = [0] + [m.end() for m in re.finditer(rb"\n", data)]
    for m in word.finditer(data):
        row = bisect.bisect_right(line_starts, m.start()) - 1
        col = m.start() - line_starts[row]
        node = tree.root_node.descendant_for_point_range((row, col), (row, col + len(m.group())))
        if node is None or node.type not in _TS_NAME_TYPES or node.start_byte != m.start():
            continue
        prev = node.prev_sibling
        sep = prev.type if prev is not None and prev.type in _TS_SEPARATORS else ""
        out.append(Occurrence(row + 1, col, _ts_qualifier(node), _ts_kind(node), _ts_is_definition(node), sep))
    return out


def _ts_qualifier(node: Any) -> str | None:
    prev = node.prev_sibling
    if prev is None or prev.type not in _TS_SEPARATORS:
        return None
    q = prev.prev_sibling
    if q is None or q.text is None:
        return "?"
    words = re.findall(r"[@A-Za-z_$][A-Za-z0-9_$]*", q.text.decode("utf-8", "replace"))
    if q.type in ("self", "this", "super", "self_expression"):
        return "self"
    return words[-1] if words else "?"


def _ts_kind(node: Any) -> str:
    cur, depth = node.parent, 0
    while cur is not None and depth < 4:
        if any(h in cur.type for h in _TS_IMPORT_HINTS):
            return "import"
        if "call" in cur.type or "invocation" in cur.type:
            return "call"
        cur, depth = cur.parent, depth + 1
    return "ref"


def _ts_is_definition(node: Any) -> bool:
    parent = node.parent
    if parent is None:
        return False
    if "invocation" in parent.type or "call" in parent.type:
        return False
    named = parent.child_by_field_name("name")
    if named is None or named.start_byte != node.start_byte:
        # C/C++: the name sits in a declarator under the definition
        if parent.type.endswith("declarator") and parent.parent is not None:
            return any(h in parent.parent.type for h in ("function_definition", "declaration"))
        return False
    return any(h in parent.type for h in _TS_DEF_HINTS)
