"""Which definition a name at a site means, from scopes, qualifiers and imports (every language).

The tree-sitter languages have no type inference here, so a site ``recv.name`` or
``name(...)`` is matched to the repository's definitions of ``name`` by evidence,
strongest first:

1. **qualifier** — ``self`` / ``this`` / ``@`` / ``Self`` name the enclosing class;
   another qualifier (``Order.total``, ``cart.Add``, ``buf::BufMut``) that equals a
   candidate's class, file stem or directory (a Go package) names that candidate;
2. **scope** — a candidate defined in the site's own file;
3. **import** — a candidate whose file the site's file imports (``import … from
   './x'``, ``require_relative``, ``use crate::a::b``, ``#include "x.h"``, a Go import
   path, a Java ``import a.b.C``, Python ``from a.b import c``);
4. **package** — a candidate in the same directory (a Go or Java package);
5. **unique** — the only definition of that name.

Several candidates left after the strongest evidence that applies: the site is
*ambiguous* (reported apart, never as a caller). Python uses this only for the
sites jedi could not resolve (``xref_python.py``).
"""

from __future__ import annotations

import functools
import posixpath
import re
from dataclasses import dataclass

__all__ = ["Candidate", "Site", "ImportIndex", "resolve_site", "SELF_WORDS"]

SELF_WORDS = frozenset({"self", "this", "@", "Self", "cls", "super"})

_IMPORT_PATTERNS = (
    re.compile(r"""(?:import|export)\s[^;'"]*?from\s*['"]([^'"]+)['"]"""),  # JS/TS import … from
    re.compile(r"""(?:require|import)\s*\(\s*['"]([^'"]+)['"]\s*\)"""),  # require('x'), import('x')
    re.compile(r"""^\s*import\s+['"]([^'"]+)['"]""", re.M),  # JS side-effect import, Go single import
    re.compile(r"""^\s*(?:[A-Za-z_][\w]*\s+)?"([\w./\-]+)"\s*$""", re.M),  # Go import block entries
    re.compile(r"""require(?:_relative)?\s*\(?\s*['"]([^'"]+)['"]"""),  # Ruby
    re.compile(r"""^\s*use\s+([\w:]+)""", re.M),  # Rust use (first path)
    re.compile(r"""^\s*(?:pub\s+)?mod\s+(\w+)\s*;""", re.M),  # Rust mod x;
    re.compile(r"""^\s*import\s+(?:static\s+)?([\w.]+)\s*;""", re.M),  # Java
    re.compile(r"""^\s*#\s*include\s*"([^"]+)\"""", re.M),  # C/C++
    re.compile(r"""^\s*from\s+(\.*[\w.]*)\s+import\b""", re.M),  # Python from x import
    re.compile(r"""^\s*import\s+([\w.]+)""", re.M),  # Python import x.y
)
_EXTS = (".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts", ".go", ".rs", ".java",
         ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".rb")


@dataclass(frozen=True, slots=True)
class Candidate:
    """A definition of the name: its file, qualified name and first line."""

    path: str
    qual: str
    line: int
    #: defined inside a function's body (a local helper): only its own file can name it, never qualified
    local: bool = False

    @property
    def container(self) -> str:
        """The enclosing definition's short name (``Order`` of ``Order.total``), or ''."""
        head, _, _ = self.qual.rpartition(".")
        return head.rsplit(".", 1)[-1]

    @property
    def container_qual(self) -> str:
        return self.qual.rpartition(".")[0]


@dataclass(frozen=True, slots=True)
class Site:
    """One code occurrence of a name: where, what qualifies it, and the class it sits in."""

    path: str
    line: int
    column: int
    qualifier: str | None
    enclosing_class: str  # qualified name of the innermost enclosing class-like definition, or ''
    kind: str  # call | import | ref
    sep: str = ""  # "." or "::" before the name


def _module_keys(path: str) -> set[str]:
    """Ways an import can spell ``path``: without extension, the package folder (``__init__``,
    ``index``, ``mod``; any Go file's folder, since Go imports name folders)."""
    stem = path
    for ext in _EXTS:
        if stem.endswith(ext):
            stem = stem[: -len(ext)]
            break
    keys = {stem, path}
    if stem.endswith(("/__init__", "/index", "/mod", "/lib")) or path.endswith(".go"):
        keys.add(_dirpath(path))
    # imports name a module from a source root ('src/', 'lib/', 'src/main/java/'): any suffix
    for k in list(keys):
        parts = k.split("/")
        keys.update("/".join(parts[i:]) for i in range(1, len(parts)))
    return {k for k in keys if k}


def _normalise(spec: str) -> str:
    spec = spec.strip().strip("'\"")
    if "::" in spec:
        spec = "/".join(p for p in spec.split("::") if p not in ("crate", "self", "super"))
    elif "/" not in spec and "." in spec.strip("."):
        spec = spec.strip(".").replace(".", "/")
    return spec


class ImportIndex:
    """Import spellings of every repository file, for :meth:`imported` (built once per version)."""

    def __init__(self, files: list[str]) -> None:
        self._by_key: dict[str, set[str]] = {}
        for f in files:
            for k in _module_keys(f):
                self._by_key.setdefault(k, set()).add(f)
        self._memo: dict[str, set[str]] = {}

    def imported(self, path: str, text: str) -> set[str]:
        """Repository files that ``path`` imports (by any language's import spelling)."""
        got = self._memo.get(path)
        if got is None:
            got = self._memo[path] = self._imported(path, text)
        return got

    def _imported(self, path: str, text: str) -> set[str]:
        specs: set[str] = set()
        for pat in _IMPORT_PATTERNS:
            specs.update(m.group(1) for m in pat.finditer(text))
        out: set[str] = set()
        for spec in specs:
            out |= self.files_for(path, spec)
        return out

    def files_for(self, path: str, spec: str) -> set[str]:
        """Repository files one import spelling in ``path`` may name (``'./x'``, ``'.mod'``, ``a::b``, ``a.b``)."""
        here = _dirpath(path)
        wanted: set[str] = set()
        if spec.startswith("."):  # relative: './x', '../y', Python '.mod'
            if "/" in spec:
                wanted.add(posixpath.normpath(posixpath.join(here, spec)))
            else:
                dots = len(spec) - len(spec.lstrip("."))
                base = here
                for _ in range(dots - 1):
                    if not base:
                        return set()  # above the repository root: nothing of ours
                    base = _dirpath(base)
                rest = spec.lstrip(".").replace(".", "/")
                wanted.add(f"{base}/{rest}".strip("/") if rest else base)
        else:
            norm = _normalise(spec)
            wanted.add(norm)
            # 'a/b/C' may name class C in a/b (Java) or an item of module a/b (Rust, Python)
            if "/" in norm:
                wanted.add(norm.rsplit("/", 1)[0])
        out: set[str] = set()
        for w in wanted:
            parts = w.split("/")
            # a Go import path names a folder under the module's path ('github.com/spf13/cobra/doc');
            # elsewhere an installed name may prefix the repository's own ('pkg.navcore.budget')
            tails = range(len(parts)) if path.endswith(".go") else range(max(1, len(parts) - 1))
            for i in tails:
                out |= self._by_key.get("/".join(parts[i:]), set())
        return out


def resolve_site(site: Site, cands: list[Candidate], imports: set[str],
                 strict: bool = False) -> tuple[Candidate | None, str]:
    """The candidate the site means and the evidence (``qualifier``/``scope``/…).

    ``(None, 'ambiguous')`` when several remain; ``(None, 'elsewhere')`` when a path
    qualifier (``regex_syntax::escape``) names none of them. ``strict``: a site
    qualified by a value (``x.decode()``) is tied only by its qualifier, never by
    weaker evidence (the value may be a ``bytes``, not one of ours).
    """
    q = site.qualifier
    cands = [c for c in cands if not c.local or (not q and c.path == site.path)]
    if not cands:
        return None, "none"
    pool = cands
    if q in SELF_WORDS and site.enclosing_class:
        own = [c for c in pool if c.path == site.path and c.container_qual == site.enclosing_class]
        if own:
            return (own[0], "qualifier") if len(own) == 1 else (None, "ambiguous")
    elif q and q not in SELF_WORDS and q != "?":
        named = _named_by(q, pool)
        if len(named) == 1:
            return named[0], "qualifier"
        if named:
            pool = named
        elif site.sep == "::":
            return None, "elsewhere"  # a module/type path that is none of the candidates'
    # a value qualifier (``ledger.reserve``) says nothing for a same-file definition
    value_qualified = bool(q) and q not in SELF_WORDS and len(pool) == len(cands)
    if strict and value_qualified:
        return None, "ambiguous"
    steps = (("import", lambda c: c.path in imports), ("package", lambda c: _dirpath(c.path) == _dirpath(site.path)))
    if not value_qualified:
        steps = (("scope", lambda c: c.path == site.path),) + steps
    for how, keep in steps:
        hit = [c for c in pool if keep(c)]
        if len(hit) == 1:
            return hit[0], how
        if hit:
            pool = hit
            break
    if len(pool) == 1:
        return pool[0], "unique"
    return None, "ambiguous"


def _named_by(q: str, pool: list[Candidate]) -> list[Candidate]:
    """Candidates whose class, file stem or folder the qualifier names (exactly, else as a prefix: app → Application)."""
    ql = q.lower().lstrip("@$")
    names = [(c, _names_of(c.path, c.qual)) for c in pool]
    exact = [c for c, ns in names if ql in ns]
    if exact or len(ql) < 3:
        return exact
    prefix = [c for c, ns in names if any(n.startswith(ql) for n in ns if n)]
    if prefix:
        return prefix
    # an abbreviation: ctx → context, cfg → config (same first letter, the rest in order)
    return [c for c, ns in names if any(n[:1] == ql[:1] and _subsequence(ql, n) for n in ns if n)]


@functools.lru_cache(maxsize=1 << 14)
def _names_of(path: str, qual: str) -> tuple[str, str, str]:
    """What a qualifier may call a candidate: its class, its file's stem, its folder (lower case)."""
    container = qual.rpartition(".")[0].rsplit(".", 1)[-1]
    return container.lower(), _stem(path).lower(), _dir(path).lower()


def _subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(ch in it for ch in short)


def _stem(path: str) -> str:
    base = path.rsplit("/", 1)[-1]
    return base.split(".", 1)[0]


def _dir(path: str) -> str:
    return _dirpath(path).rsplit("/", 1)[-1]


def _dirpath(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""
