"""Python front end: stdlib ``ast`` gives exact signatures, decorators and docstrings.

The parser reads the file's skeleton (:mod:`repomap.py_skeleton`: the function bodies the
walk below never reads cut, line numbers kept) when it has one; a skeleton it refuses is
never used, the whole file is parsed instead.
"""

from __future__ import annotations

import ast
import warnings

from durable_navigator.repomap.parsed import ParsedFile, SymbolDraft
from durable_navigator.repomap.py_skeleton import skeleton

__all__ = ["parse_python"]

_MAX_VALUE_SIG_CHARS = 120
#: what ``ast.parse`` raises for source it cannot take
_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError)


def parse_python(text: str, lines: list[str] | None = None, whole: bool = False) -> ParsedFile:
    """Parse Python source; a syntax error yields an empty outline with ``error`` set (except
    one inside a function body the skeleton cuts: the walk never reads those).

    ``lines`` is ``text.splitlines()`` when the caller already has it. ``whole`` parses the
    whole file, never its skeleton (what the skeleton's parse is checked against).
    """
    with warnings.catch_warnings():
        # stdlib/test sources contain invalid escape sequences on purpose
        warnings.simplefilter("ignore")
        cut = None if whole else skeleton(text)
        tree = None
        if cut is not None:
            try:
                tree = ast.parse(cut)
            except _PARSE_ERRORS:
                tree = None  # a refused skeleton is never used: the whole file decides
        if tree is None:
            try:
                tree = ast.parse(text)
            except _PARSE_ERRORS as exc:
                return ParsedFile(error=f"python syntax error: {type(exc).__name__}")
    out = ParsedFile()
    lines = text.splitlines() if lines is None else lines
    _walk_body(tree.body, "", 0, out, lines)
    for node in tree.body:
        if isinstance(node, ast.Import):
            out.imports.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.imports.append("." * node.level + (node.module or ""))
    return out


def _walk_body(body: list[ast.stmt], prefix: str, depth: int, out: ParsedFile, lines: list[str]) -> None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            qual = f"{prefix}{node.name}"
            out.symbols.append(_def_symbol(node, qual, depth, prefix))
            if isinstance(node, ast.ClassDef) or depth == 0:
                # nested classes/methods are navigable; locals of functions are not
                _walk_body(node.body, qual + ".", depth + 1, out, lines)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and (depth == 0 or prefix):
            sym = _value_symbol(node, prefix, depth, lines)
            if sym is not None:
                out.symbols.append(sym)
        elif isinstance(node, (ast.If, ast.Try)) and depth == 0:
            # module-level conditional definitions (platform switches, optional imports)
            for sub in (node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])):
                _walk_body(sub, prefix, depth, out, lines)


def _def_symbol(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, qual: str,
                depth: int, prefix: str) -> SymbolDraft:
    decos = " ".join(f"@{_unparse(d)}" for d in node.decorator_list)
    if isinstance(node, ast.ClassDef):
        bases = [_unparse(b) for b in node.bases] + [_unparse(k) for k in node.keywords]
        head = f"class {node.name}({', '.join(bases)}):" if bases else f"class {node.name}:"
        kind = "class"
    else:
        ret = f" -> {_unparse(node.returns)}" if node.returns else ""
        asy = "async " if isinstance(node, ast.AsyncFunctionDef) else ""
        args = _arguments(node.args)
        head = f"{asy}def {node.name}({ast.unparse(node.args) if args is None else args}){ret}:"
        kind = "method" if prefix and depth > 0 else "function"
    sig_start = min([d.lineno for d in node.decorator_list] + [node.lineno])
    first_body = node.body[0].lineno if node.body else node.lineno
    sig_end = max(node.lineno, first_body - 1) if first_body > node.lineno else node.lineno
    sym = SymbolDraft(
        qualname=qual, name=node.name, kind=kind, start=sig_start,
        end=node.end_lineno or node.lineno, sig_start=sig_start, sig_end=sig_end,
        signature=f"{decos} {head}" if decos else head, depth=depth,
    )
    doc_node = node.body[0] if node.body else None
    if (isinstance(doc_node, ast.Expr) and isinstance(doc_node.value, ast.Constant)
            and isinstance(doc_node.value.value, str)):
        sym.doc = ast.get_docstring(node, clean=True)
        sym.doc_start, sym.doc_end = doc_node.lineno, doc_node.end_lineno or doc_node.lineno
    return sym


def _value_symbol(node: ast.Assign | ast.AnnAssign, prefix: str, depth: int,
                  lines: list[str]) -> SymbolDraft | None:
    """Module constants (UPPER_CASE, ``__all__``) and class-level annotated fields."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if len(targets) != 1 or not isinstance(targets[0], ast.Name):
        return None
    name = targets[0].id
    is_field = isinstance(node, ast.AnnAssign) and bool(prefix)
    if not (is_field or (depth == 0 and (name.isupper() or name == "__all__"))):
        return None
    first = lines[node.lineno - 1].strip() if node.lineno - 1 < len(lines) else name
    if len(first) > _MAX_VALUE_SIG_CHARS:
        first = first[:_MAX_VALUE_SIG_CHARS] + " ..."
    return SymbolDraft(
        qualname=f"{prefix}{name}", name=name, kind="field" if is_field else "constant",
        start=node.lineno, end=node.end_lineno or node.lineno, sig_start=node.lineno,
        sig_end=node.lineno, signature=first, depth=depth,
    )


# ---- signatures: ``ast.unparse``'s exact text for the common shapes, without its visitor ----
# ``ast.unparse`` builds an unparser and dispatches every node through a visitor; the
# stdlib's ~60,000 signatures spent more time there than in the rest of the walk. These
# functions write the same text as Python 3.11's unparser for plain names, dotted names,
# simple constants, subscripts, ``X | Y``, negative numbers and calls of those (the shapes
# of almost every annotation, default, base and decorator), and return None for anything
# else, which then goes to ``ast.unparse`` (``tests/repomap/test_parse_python.py`` compares
# both on the stdlib).

_SIMPLE_CONSTANTS = (int, bool, type(None), bytes)


def _unparse(node: ast.expr | ast.keyword) -> str:
    text = _expr(node)
    return ast.unparse(node) if text is None else text


def _expr(node: ast.AST) -> str | None:
    """``ast.unparse(node)`` for the shapes above (at the precedence of an argument), else None."""
    kind = type(node)
    if kind is ast.Name:
        return node.id
    if kind is ast.Attribute:
        value = node.value
        if type(value) is ast.Name:
            return f"{value.id}.{node.attr}"
        if type(value) is ast.Attribute:
            base = _expr(value)
            return None if base is None else f"{base}.{node.attr}"
        return None
    if kind is ast.Constant:
        value = node.value
        if value is ...:
            return "..."
        if type(value) is str:
            return ("u" if node.kind == "u" else "") + repr(value)
        return repr(value) if type(value) in _SIMPLE_CONSTANTS else None
    if kind is ast.Subscript:
        return _subscript(node)
    if kind is ast.BinOp:
        if type(node.op) is not ast.BitOr or type(node.right) is ast.BinOp:
            return None  # a right operand of the same precedence would need parentheses
        left, right = _expr(node.left), _expr(node.right)
        return None if left is None or right is None else f"{left} | {right}"
    if kind is ast.UnaryOp:
        operand = node.operand
        if (type(node.op) is ast.USub and type(operand) is ast.Constant
                and type(operand.value) is int):
            return f"-{operand.value!r}"
        return None
    if kind is ast.Call:
        return _call(node)
    if kind is ast.keyword:
        value = _expr(node.value)
        if value is None:
            return None
        return f"**{value}" if node.arg is None else f"{node.arg}={value}"
    return None


def _subscript(node: ast.Subscript) -> str | None:
    if type(node.value) not in (ast.Name, ast.Attribute):
        return None
    value = _expr(node.value)
    index = node.slice
    if type(index) is ast.Tuple:
        if len(index.elts) < 2:
            return None  # ``x[()]`` and ``x[a,]``
        parts = [_expr(e) for e in index.elts]
        inner = None if None in parts or any(type(e) is ast.Tuple for e in index.elts) else ", ".join(parts)
    else:
        inner = _expr(index)
    return None if value is None or inner is None else f"{value}[{inner}]"


def _call(node: ast.Call) -> str | None:
    if type(node.func) not in (ast.Name, ast.Attribute):
        return None
    parts = [_expr(node.func)]
    parts += [_expr(a) for a in node.args]
    parts += [_expr(k) for k in node.keywords]
    if None in parts:
        return None
    return f"{parts[0]}({', '.join(parts[1:])})"


def _arg(a: ast.arg) -> str | None:
    if a.annotation is None:
        return a.arg
    ann = _expr(a.annotation)
    return None if ann is None else f"{a.arg}: {ann}"


def _param(a: ast.arg, default: ast.expr | None) -> str | None:
    """``name[: annotation][=default]``, or None when a part has no shape above."""
    text = _arg(a)
    if text is None or default is None:
        return text
    value = _expr(default)
    return None if value is None else f"{text}={value}"


def _arguments(args: ast.arguments) -> str | None:
    """``ast.unparse(args)`` (Python 3.11's ``visit_arguments``) when every part has a shape above."""
    out: list[str] = []
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + args.defaults
    for index, (a, d) in enumerate(zip(positional, defaults), 1):
        text = _param(a, d)
        if text is None:
            return None
        if index == len(args.posonlyargs):
            text += ", /"
        out.append(text)
    if args.vararg or args.kwonlyargs:
        star = "*"
        if args.vararg:
            vararg = _arg(args.vararg)
            if vararg is None:
                return None
            star += vararg
        out.append(star)
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        text = _param(a, d)
        if text is None:
            return None
        out.append(text)
    if args.kwarg:
        kwarg = _arg(args.kwarg)
        if kwarg is None:
            return None
        out.append("**" + kwarg)
    return ", ".join(out)
