"""``callers`` / ``callees``: references resolved through imports and scopes, code only.

One :class:`References` per engine version. A query for a definition T named ``n``:

* **candidate files** — the files whose identifiers include ``n`` (the ranking
  structure's reference matrix; every file of the language for names shorter than
  the index keeps) in T's language family, plus T's own file;
* **sites** — code occurrences of ``n`` in them (``xref_sites``: never a README,
  a docstring, a comment or a string; definitions' own names and import statements
  are skipped: an import names the definition but calls nothing);
* **resolution** — Python sites through jedi (``xref_python``); a site jedi cannot
  resolve, and every site in the other languages, by scope / qualifier / import
  evidence (``xref_scope``). A site is a caller when it resolves to T; a site that
  could mean several definitions is returned with ``resolved=False`` (shown apart).

jedi work per query is bounded by a site count (``XrefConfig.python_max_sites``,
the likeliest sites first: T's own file, then the files that import it), by the
number of distinct files it opens (``python_max_files``: each costs a parse and its
imports' inference) and, as a safety net only, by wall time (``python_budget_s``);
the remaining sites are judged by scope evidence (``how`` ends in ``+budget``). Every answer is cached for the
version, so a repeated or overlapping query is fast.
"""

from __future__ import annotations

import io
import re
import time
import token
import tokenize
from collections.abc import Callable
from pathlib import Path

from durable_navigator.repomap.config import XrefConfig
from durable_navigator.repomap.index import REC, SYM
from durable_navigator.repomap.parse_treesitter import language_for
from durable_navigator.repomap.types import SymbolRef
from durable_navigator.repomap.xref_python import PythonResolver
from durable_navigator.repomap.xref_scope import Candidate, ImportIndex, Site, resolve_site
from durable_navigator.repomap.xref_sites import Occurrence, is_python, occurrences

__all__ = ["References", "language_family"]

#: symbol kinds a body does not "call" (attributes, constants)
_NOT_CALLABLE = frozenset({"field", "constant"})
_FUNCTION_KINDS = frozenset({"function", "method"})
_CLASS_KINDS = frozenset({"class", "interface", "module", "struct", "trait", "impl", "type", "enum"})
_FAMILY = {"javascript": "js", "typescript": "js", "tsx": "js", "c": "c", "cpp": "c"}
_PY_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]+)", re.M)
_PY_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w. \t,]+)", re.M)
#: attribute names of Python's builtin types: an untyped ``x.<name>`` may well be one of these
_BUILTIN_ATTRS = frozenset(a for t in (str, bytes, bytearray, dict, list, set, frozenset, tuple, int, float,
                                       complex, object, type, memoryview, range, slice, BaseException)
                           for a in dir(t))
#: names shorter than this are not in the reference matrix (``index.MIN_REF``)
_MIN_INDEXED = 3


def language_family(path: str) -> str:
    """Files that can reference each other's definitions share a family (JS/TS, C/C++, …)."""
    if is_python(path):
        return "python"
    lang = language_for(path) or ""
    return _FAMILY.get(lang, lang)


class References:
    """Callers and callees over one engine version (thread-safe; answers cached)."""

    def __init__(self, root: Path, files: list[str], records: dict[str, tuple], refs_of: Callable[[str], list[str]],
                 read: Callable[[str], str], definitions: Callable[[str], list[tuple[str, int]]],
                 cfg: XrefConfig, shadow_base: Path, version: str) -> None:
        self._files = files
        self._records = records
        self._refs_of = refs_of
        self._read = read
        self._defs = definitions
        self._cfg = cfg
        self._python = PythonResolver(root, files, shadow_base, version, cfg.keep_shadows)
        self._imports = ImportIndex(files)
        self._family = {p: language_family(p) for p in files}
        self._bindings: dict[str, dict[str, str]] = {}
        #: per file: qualified name -> index of its last definition (see :meth:`_binding`)
        self._last_of: dict[str, dict[str, int]] = {}
        #: answers of this version: (query, path, symbol index) -> refs
        self._results: dict[tuple[str, str, int], list[SymbolRef]] = {}

    # ---- callers --------------------------------------------------------------------
    def callers(self, path0: str, k0: int) -> list[SymbolRef]:
        """Sites that reference definition ``k0`` of ``path0``: resolved callers first, then ambiguous ones."""
        return self._memo(("callers", path0, k0), lambda: self._callers(path0, k0))

    def callees(self, path0: str, k0: int) -> list[SymbolRef]:
        """Definitions the body of ``k0`` in ``path0`` references (resolved; ambiguous names left out)."""
        return self._memo(("callees", path0, k0), lambda: self._callees(path0, k0))

    def _memo(self, key: tuple[str, str, int], compute: Callable[[], list[SymbolRef]]) -> list[SymbolRef]:
        got = self._results.get(key)
        if got is None:
            got = self._results[key] = compute()
        return list(got)

    def _callers(self, path0: str, k0: int) -> list[SymbolRef]:
        k0 = self._binding(path0, k0)
        sym = self._records[path0][REC["symbols"]][k0]
        name = sym[SYM["name"]]
        fam = self._family.get(path0, "")
        if not fam:
            return []
        target = self._candidate(path0, k0)
        cands = self._candidates(name, fam)
        texts = {p: self._read(p) for p in self._candidate_files(name, fam, path0)}
        sites = [(p, occ) for p, text in texts.items() for occ in occurrences(p, text, name)
                 if not occ.definition and occ.kind != "import"]  # an import names it but calls nothing
        # jedi is asked about the likeliest sites first (T's own file, then files importing it), up to
        # a fixed count, so the answer does not depend on how loaded the machine is
        near = {p for p, text in texts.items() if path0 in self._imports.imported(p, text)}
        sites.sort(key=lambda s: (s[0] != path0, s[0] not in near, s[0], s[1].line, s[1].column))
        budget = _JediBudget(self._cfg)
        out: list[SymbolRef] = []
        for p, occ in sites[: self._cfg.max_sites]:
            picked, how = self._resolve(p, texts[p], occ, name, cands, budget)
            if picked is None and how != "ambiguous":
                continue  # resolved to something else (another definition, the standard library)
            if picked is not None and picked != target:
                continue
            out.append(SymbolRef(self._enclosing(p, occ.line), p, occ.line, occ.column, occ.kind, how,
                                 picked is not None))
        return _ordered(out)

    def _candidate_files(self, name: str, fam: str, path0: str) -> list[str]:
        if len(name) >= _MIN_INDEXED:
            files = set(self._refs_of(name))
        else:
            files = set(self._files)
        files.add(path0)
        return sorted(f for f in files if self._family.get(f) == fam)

    def _candidates(self, name: str, fam: str) -> list[Candidate]:
        # one candidate per binding: ``@overload`` stubs and their implementation are one definition
        found = {(p, self._binding(p, k)) for p, k in self._defs(name) if self._family.get(p) == fam}
        return [self._candidate(p, k) for p, k in sorted(found)]

    def _binding(self, path: str, k: int) -> int:
        """The definition that stands for ``k``: the last one of its file with its qualified name.

        ``@overload`` stubs, a property's getter and setter, and a name defined in both arms of an
        ``if`` share a qualified name; a call site names them all at once, and jedi answers with
        either the stub or the implementation. The last definition is the one the name is bound
        to at run time (the implementation after its stubs), so callers and callees use it.
        """
        last = self._last_of.get(path)
        syms = self._records[path][REC["symbols"]]
        if last is None:  # qualified name -> its last definition, once per file
            last = self._last_of[path] = {}
            for j in sorted(range(len(syms)), key=lambda j: (syms[j][SYM["start"]], j)):
                last[syms[j][SYM["qual"]]] = j
        return last[syms[k][SYM["qual"]]]

    def _candidate(self, path: str, k: int) -> Candidate:
        syms = self._records[path][REC["symbols"]]
        s = syms[self._binding(path, k)]
        head = s[SYM["qual"]].rpartition(".")[0]
        local = bool(head) and any(o[SYM["qual"]] == head and o[SYM["kind"]] in _FUNCTION_KINDS for o in syms)
        return Candidate(path, s[SYM["qual"]], s[SYM["start"]], local)

    def _resolve(self, path: str, text: str, occ: Occurrence, name: str, cands: list[Candidate],
                 budget: "_JediBudget") -> tuple[Candidate | None, str]:
        """(the candidate the site means or None, how); ``how`` is 'elsewhere' when it means no candidate."""
        suffix = ""
        strict = False
        if is_python(path):
            if budget.take(path):
                answers = self._python.goto(path, text, occ.line, occ.column)
                if answers:
                    for c in cands:
                        if any(a[0] == c.path and self._spans(c, a[1]) for a in answers):
                            return c, "jedi"
                    return None, "elsewhere"
                # jedi does not know the receiver's type: a name builtin types also have
                # (``decode``, ``get``, ``append``) is as likely theirs as ours
                strict = name in _BUILTIN_ATTRS
            else:
                suffix, strict = "+budget", True
            if occ.qualifier is None or occ.qualifier not in ("?", "self", "cls"):
                # a name (or the qualifier of ``mod.name``) bound by an import jedi could not
                # resolve is one of ours only if that import names the candidate's file
                spec = self._python_bindings(path, text).get(occ.qualifier or name)
                if spec is not None:
                    files = self._imports.files_for(path, spec)
                    cands = [c for c in cands if c.path in files]
                    if not cands:
                        return None, "elsewhere"
        site = Site(path, occ.line, occ.column, occ.qualifier, self._enclosing_class(path, occ.line), occ.kind,
                    occ.sep)
        picked, how = resolve_site(site, cands, self._imports.imported(path, text), strict)
        return picked, how + suffix if picked is not None else how

    def _python_bindings(self, path: str, text: str) -> dict[str, str]:
        """Names bound by ``from M import name`` / ``import M`` in a Python file: name -> M.name / M."""
        got = self._bindings.get(path)
        if got is None:
            got = {}
            for m in _PY_FROM.finditer(text):
                mod = m.group(1)
                for part in m.group(2).replace("(", " ").replace(")", " ").replace("\\", " ").split(","):
                    bits = part.split()
                    if not bits or bits[0] == "*":
                        continue
                    alias = bits[2] if len(bits) == 3 and bits[1] == "as" else bits[0]
                    got[alias] = f"{mod}.{bits[0]}" if mod.strip(".") else f"{mod}{bits[0]}"
            for m in _PY_IMPORT.finditer(text):
                for part in m.group(1).split(","):
                    bits = part.split()
                    if bits:
                        got[bits[2] if len(bits) == 3 and bits[1] == "as" else bits[0].split(".")[0]] = bits[0]
            self._bindings[path] = got
        return got

    def _spans(self, c: Candidate, line: int) -> bool:
        """jedi names a definition by its ``def``/``class`` line; ours starts at its first decorator.

        Any definition of the candidate's binding counts (jedi may answer with an ``@overload`` stub).
        """
        return any(s[SYM["qual"]] == c.qual and s[SYM["start"]] <= line <= max(s[SYM["sig_end"]], s[SYM["start"]])
                   for s in self._records[c.path][REC["symbols"]])

    # ---- callees --------------------------------------------------------------------
    def _callees(self, path0: str, k0: int) -> list[SymbolRef]:
        k0 = self._binding(path0, k0)  # an @overload stub's body is ``...``: the implementation's calls
        sym = self._records[path0][REC["symbols"]][k0]
        fam = self._family.get(path0, "")
        if not fam:
            return []
        text = self._read(path0)
        budget = _JediBudget(self._cfg)
        found: dict[str, SymbolRef] = {}
        for name, occ in self._names_in(path0, text, sym[SYM["start"]], sym[SYM["end"]]):
            if occ.definition or name == sym[SYM["name"]]:
                continue
            cands = self._candidates(name, fam)
            if not cands:
                continue
            picked, how = self._resolve(path0, text, occ, name, cands, budget)
            if picked is None:
                continue
            kind = self._kind(picked)
            if kind in _NOT_CALLABLE:
                continue
            sid = f"{picked.path}::{picked.qual}"
            if sid not in found:
                found[sid] = SymbolRef(sid, picked.path, picked.line, 0, occ.kind, how, True)
        return sorted(found.values(), key=lambda r: (r.path, r.line, r.symbol_id))

    def _names_in(self, path: str, text: str, start: int, end: int) -> list[tuple[str, Occurrence]]:
        """Occurrences of every name that some definition has, inside lines ``start..end``."""
        lines = text.splitlines()
        body = "\n".join(lines[start - 1:end])
        names = sorted({w for w in _words(body, path) if self._defs(w)})
        out: list[tuple[str, Occurrence]] = []
        for name in names:
            out += [(name, o) for o in occurrences(path, text, name) if start <= o.line <= end]
        return sorted(out, key=lambda x: (x[1].line, x[1].column))

    def _kind(self, c: Candidate) -> str:
        for s in self._records[c.path][REC["symbols"]]:
            if s[SYM["qual"]] == c.qual and s[SYM["start"]] == c.line:
                return str(s[SYM["kind"]])
        return ""

    # ---- enclosing definitions --------------------------------------------------------
    def _enclosing(self, path: str, line: int) -> str:
        best, span = f"{path}::", None
        for s in self._records[path][REC["symbols"]]:
            if s[SYM["start"]] <= line <= s[SYM["end"]] and s[SYM["kind"]] not in _NOT_CALLABLE:
                width = s[SYM["end"]] - s[SYM["start"]]
                if span is None or width <= span:
                    best, span = f"{path}::{s[SYM['qual']]}", width
        return best

    def _enclosing_class(self, path: str, line: int) -> str:
        best, span = "", None
        for s in self._records[path][REC["symbols"]]:
            if s[SYM["kind"]] in _CLASS_KINDS and s[SYM["start"]] <= line <= s[SYM["end"]]:
                width = s[SYM["end"]] - s[SYM["start"]]
                if span is None or width <= span:
                    best, span = s[SYM["qual"]], width
        return best

    @property
    def jedi_seconds(self) -> float:
        """Seconds spent inside jedi by this version so far (for measurements)."""
        return self._python.jedi_seconds


class _JediBudget:
    """jedi work one query may do: sites, distinct files (each costs a parse and its imports'
    inference), and a wall-clock safety net for pathological code only."""

    def __init__(self, cfg: XrefConfig) -> None:
        self._left = cfg.python_max_sites
        self._files: set[str] = set()
        self._max_files = cfg.python_max_files
        self._deadline = time.monotonic() + cfg.python_budget_s

    def take(self, path: str) -> bool:
        if self._left <= 0 or time.monotonic() >= self._deadline:
            return False
        if path not in self._files:
            if len(self._files) >= self._max_files:
                return False
            self._files.add(path)
        self._left -= 1
        return True


def _words(body: str, path: str) -> set[str]:
    if is_python(path):
        try:
            return {t.string for t in tokenize.generate_tokens(io.StringIO(body).readline) if t.type == token.NAME}
        except (tokenize.TokenError, SyntaxError, IndentationError):
            pass
    return set(re.findall(r"[A-Za-z_$][A-Za-z0-9_$]*", body))


def _ordered(refs: list[SymbolRef]) -> list[SymbolRef]:
    return sorted(set(refs), key=lambda r: (not r.resolved, r.path, r.line, r.column))

