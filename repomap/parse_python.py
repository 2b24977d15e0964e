"""Python front end: stdlib ``ast`` gives exact signatures, decorators and docstrings."""

from __future__ import annotations

import ast
import warnings

from durable_navigator.repomap.parsed import ParsedFile, SymbolDraft

__all__ = ["parse_python"]

_MAX_VALUE_SIG_CHARS = 120


def parse_python(text: str, lines: list[str] | None = None) -> ParsedFile:
    """Parse Python source; a syntax error yields an empty outline with ``error`` set.

    ``lines`` is ``text.splitlines()`` when the caller already has it.
    """
    try:
        with warnings.catch_warnings():
            # stdlib/test sources contain invalid escape sequences on purpose
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
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
    decos = " ".join(f"@{ast.unparse(d)}" for d in node.decorator_list)
    if isinstance(node, ast.ClassDef):
        bases = [ast.unparse(b) for b in node.bases] + [ast.unparse(k) for k in node.keywords]
        head = f"class {node.name}({', '.join(bases)}):" if bases else f"class {node.name}:"
        kind = "class"
    else:
        ret = f" -> {ast.unparse(node.returns)}" if node.returns else ""
        asy = "async " if isinstance(node, ast.AsyncFunctionDef) else ""
        head = f"{asy}def {node.name}({ast.unparse(node.args)}){ret}:"
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
