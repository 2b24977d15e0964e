"""Code occurrences of a name in one file: never in a string, docstring or comment.

* Every language through tree-sitter (Python with ``tree-sitter-python``, the
  others with the engine's grammars): the leaf at each textual match must be an identifier
  node (``identifier``, ``field_identifier``, ``property_identifier``,
  ``type_identifier``, Ruby's ``constant`` …); comment and string contents are
  other node types.

Each occurrence carries its qualifier (the text before ``.``, ``::`` or ``->``),
whether it is a call, an import or another reference, and whether it is itself a
definition's name (then it is no reference at all).
"""

from __future__ import annotations

import bisect
import functools
import re
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
    """Python source (resolved with jedi)."""
    return path.endswith((".py", ".pyi"))


def occurrences(path: str, text: str, name: str) -> list[Occurrence]:
    """Code occurrences of ``name`` in ``text`` (empty for a language without a parser)."""
    if name not in text:
        return []
    if is_python(path):
        return _treesitter(_python_parser(), text, name)
    lang = language_for(path)
    if not lang:
        return []
    from durable_navigator.repomap.parse_treesitter import _parser_and_query

    return _treesitter(_parser_and_query(lang)[0], text, name)


@functools.cache
def _python_parser() -> Any:
    """tree-sitter's Python grammar: ~50x faster than ``tokenize`` on the files a common name is in."""
    import tree_sitter as ts
    import tree_sitter_python

    return ts.Parser(ts.Language(tree_sitter_python.language()))


def _treesitter(parser: Any, text: str, name: str) -> list[Occurrence]:
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
        chars = len(data[line_starts[row]:m.start()].decode("utf-8", "replace"))  # jedi counts characters
        out.append(Occurrence(row + 1, chars, _ts_qualifier(node), _ts_kind(node), _ts_is_definition(node), sep))
    return out


def _ts_qualifier(node: Any) -> str | None:
    prev = node.prev_sibling
    if prev is None or prev.type not in _TS_SEPARATORS:
        return None
    q = prev.prev_sibling
    if q is None or q.text is None:
        return "?"
    words = re.findall(r"[@A-Za-z_$][A-Za-z0-9_$]*", q.text.decode("utf-8", "replace"))
    if q.type in ("self", "this", "self_expression"):
        return "self"
    if q.type == "call" and words[:1] == ["super"]:
        return "?"  # super().name: a base class's, not the enclosing class's
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
