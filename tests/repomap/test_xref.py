"""callers / callees resolved through imports and scopes; never docs, comments or strings.

Each repository below is small and written so that every call site is known by
hand: a name defined twice (two classes, two packages, two modules) plus prose
that mentions it (README, docstrings, comments, strings), so a textual match
would be wrong in both directions.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from durable_navigator.repomap import EngineConfig, RepoMap
from durable_navigator.repomap.config import XrefConfig


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def _sites(refs: list, resolved: bool = True) -> set[tuple[str, int]]:
    return {(r.path, r.line) for r in refs if r.resolved == resolved}


PYTHON = {
    "README.md": "# ledger\nCall `Ledger.reserve()` before a model call; reserve is cheap.\n",
    "src/shop/__init__.py": "",
    "src/shop/ledger.py": '''
        """A ledger: reserve() before, reconcile() after."""


        class Ledger:
            def reserve(self, amount: int) -> int:
                """Reserve ``amount``; see reserve() in the README."""
                return self.check(amount)  # reserve calls check

            def check(self, amount: int) -> int:
                return amount


        class Seats:
            def reserve(self, seat: str) -> str:
                return seat
        ''',
    "src/shop/guard.py": '''
        from shop.ledger import Ledger, Seats
        from shop import ledger as ledger_mod


        class Guard:
            def __init__(self, ledger: Ledger, seats: Seats) -> None:
                self._ledger = ledger
                self._seats = seats

            def admit(self, amount: int) -> int:
                # reserve first, then admit
                self._seats.reserve("A1")
                note = "reserve(amount) happens here"
                return self._ledger.reserve(amount)


        def direct() -> int:
            return ledger_mod.Ledger().reserve(3)
        ''',
    "tests/test_guard.py": '''
        from shop.ledger import Ledger


        def test_reserve() -> None:
            """reserve() returns the amount."""
            assert Ledger().reserve(2) == 2
        ''',
}


@pytest.fixture(scope="module")
def py_engine(tmp_path_factory: pytest.TempPathFactory) -> RepoMap:
    root = _write(tmp_path_factory.mktemp("py") / "repo", PYTHON)
    return RepoMap.open(root, cache_dir=tmp_path_factory.mktemp("cache"), jobs=1)


def test_python_callers_are_resolved_call_sites_only(py_engine: RepoMap) -> None:
    refs = py_engine.callers("src/shop/ledger.py::Ledger.reserve")
    assert _sites(refs) == {("src/shop/guard.py", 14), ("src/shop/guard.py", 18), ("tests/test_guard.py", 6)}
    assert not _sites(refs, resolved=False)
    by_line = {r.line: r for r in refs}
    assert by_line[14].symbol_id == "src/shop/guard.py::Guard.admit" and by_line[14].how == "jedi"
    assert by_line[14].kind == "call" and by_line[18].symbol_id == "src/shop/guard.py::direct"
    # the other class's method has its own caller, and nothing of Ledger's
    assert _sites(py_engine.callers("src/shop/ledger.py::Seats.reserve")) == {("src/shop/guard.py", 12)}


def test_python_callees_resolve_through_types(py_engine: RepoMap) -> None:
    assert [r.symbol_id for r in py_engine.callees("src/shop/guard.py::Guard.admit")] == [
        "src/shop/ledger.py::Ledger.reserve", "src/shop/ledger.py::Seats.reserve"]
    assert [r.symbol_id for r in py_engine.callees("src/shop/ledger.py::Ledger.reserve")] == [
        "src/shop/ledger.py::Ledger.check"]


def test_repeated_query_is_answered_from_the_version_cache(py_engine: RepoMap) -> None:
    first = py_engine.callers("src/shop/ledger.py::Ledger.reserve")
    spent = py_engine._references().jedi_seconds
    assert py_engine.callers("src/shop/ledger.py::Ledger.reserve") == first
    assert py_engine._references().jedi_seconds == spent  # no jedi call the second time


def test_jedi_sees_only_the_indexed_files(py_engine: RepoMap) -> None:
    py_engine.callers("src/shop/ledger.py::Ledger.reserve")
    shadow = py_engine._references()._python._shadow
    assert shadow is not None and not str(shadow).startswith(str(py_engine.root))
    linked = sorted(p.relative_to(shadow).as_posix() for p in shadow.rglob("*.py"))
    assert linked == sorted(f for f in py_engine.files if f.endswith(".py"))
    assert all(p.resolve().is_relative_to(py_engine.root) for p in shadow.rglob("*.py"))


OVERLOADS = {
    "pkg/__init__.py": "",
    "pkg/core.py": '''
        import typing as t


        class Command:
            @t.overload
            def main(self, args: None = None, standalone: t.Literal[True] = True) -> t.NoReturn: ...

            @t.overload
            def main(self, args: list[str] | None = None, standalone: bool = ...) -> t.Any: ...

            def main(self, args: list[str] | None = None, standalone: bool = True) -> t.Any:
                return self.invoke(args)

            def __call__(self, *args: t.Any) -> t.Any:
                return self.main(*args)

            def invoke(self, args: list[str] | None) -> t.Any:
                return args


        class Other:
            def main(self) -> int:
                return 1
        ''',
    "pkg/run.py": '''
        from pkg.core import Command, Other


        def run(cmd: Command, other: Other) -> None:
            cmd.main(["x"])
            other.main()
        ''',
}


@pytest.mark.parametrize("symbol", ["Command.main", "pkg/core.py::Command.main"])
def test_callers_of_an_overloaded_method_are_the_calls_of_any_of_its_definitions(tmp_path: Path,
                                                                                 symbol: str) -> None:
    # the name resolves to its first definition (an @overload stub); jedi answers with the implementation
    engine = RepoMap.open(_write(tmp_path / "repo", OVERLOADS), cache_dir=tmp_path / "cache", jobs=1)
    assert [s.start_line for s in engine.find_symbol(symbol)] == [5, 8, 11]
    refs = engine.callers(symbol)
    assert _sites(refs) == {("pkg/core.py", 15), ("pkg/run.py", 5)}, refs
    assert not _sites(refs, resolved=False)
    # callees of the overloaded name are the implementation's, not the stubs' (``...``)
    assert [r.symbol_id for r in engine.callees(symbol)] == ["pkg/core.py::Command.invoke"]
    # a call of the overloaded method is one callee, at the implementation
    assert [(r.symbol_id, r.line) for r in engine.callees("pkg/core.py::Command.__call__")] == [
        ("pkg/core.py::Command.main", 11)]


TREESITTER = {
    # Go: two packages each with their own helper; comments and strings mention it
    "go/cart/cart.go": """
        package cart

        // Total sums the cart; Total is called by Checkout.
        func Total(items []int) int {
            return sum(items)
        }

        func sum(xs []int) int { n := 0; for _, x := range xs { n += x }; return n }

        func Checkout(items []int) string {
            t := Total(items)
            return fmt.Sprint("Total: ", t)
        }
        """,
    "go/report/report.go": """
        package report

        import "example.com/shop/cart"

        func Total(rows []string) int { return len(rows) }

        func Print(items []int, rows []string) int {
            return cart.Total(items) + Total(rows)
        }
        """,
    # JavaScript: a method on two objects; calls qualified by the imported module and by this
    "js/lib/context.js": """
        module.exports = {
          // onerror handles errors
          onerror(err) { return this.log(err) },
          log(err) { return err }
        };
        """,
    "js/lib/app.js": """
        const context = require('./context');
        class App {
          onerror(err) { return err }
          handle(err) {
            this.onerror(err);
            return context.onerror(err);
          }
        }
        module.exports = App;
        """,
    # Ruby: a module function vs. a private method of the same name
    "rb/lib/utils.rb": """
        module Utils
          # parse_query splits a query string
          def self.parse_query(qs)
            qs.split("&")
          end
        end
        """,
    "rb/lib/request.rb": """
        require_relative 'utils'
        class Request
          def params(qs)
            Utils.parse_query(qs) + parse_query(qs)
          end

          def parse_query(qs)
            ["parse_query"]
          end
        end
        """,
    # Rust: a function vs an external crate's function of the same name
    "rs/src/escape.rs": """
        /// escape(b"x") escapes bytes
        pub fn escape(bytes: &[u8]) -> String {
            String::from_utf8_lossy(bytes).into_owned()
        }

        pub fn escape_all(xs: &[&[u8]]) -> Vec<String> {
            xs.iter().map(|x| escape(x)).collect()
        }
        """,
    "rs/src/glob.rs": """
        use crate::escape::escape;

        pub fn quote(s: &str) -> String {
            let a = regex_syntax::escape(s);
            a + &escape(s.as_bytes())
        }
        """,
}


@pytest.fixture(scope="module")
def ts_engine(tmp_path_factory: pytest.TempPathFactory) -> RepoMap:
    root = _write(tmp_path_factory.mktemp("ts") / "repo", TREESITTER)
    return RepoMap.open(root, cache_dir=tmp_path_factory.mktemp("cache"), jobs=1)


@pytest.mark.parametrize(("symbol", "sites"), [
    ("go/cart/cart.go::Total", {("go/cart/cart.go", 11), ("go/report/report.go", 8)}),
    ("go/report/report.go::Total", {("go/report/report.go", 8)}),
    ("js/lib/context.js::onerror", {("js/lib/app.js", 6)}),
    ("js/lib/app.js::App.onerror", {("js/lib/app.js", 5)}),
    ("rb/lib/utils.rb::Utils.parse_query", {("rb/lib/request.rb", 4)}),
    ("rb/lib/request.rb::Request.parse_query", {("rb/lib/request.rb", 4)}),
    ("rs/src/escape.rs::escape", {("rs/src/escape.rs", 7), ("rs/src/glob.rs", 5)}),
])
def test_treesitter_callers_follow_qualifiers_scopes_and_imports(ts_engine: RepoMap, symbol: str,
                                                                  sites: set[tuple[str, int]]) -> None:
    refs = ts_engine.callers(symbol)
    assert _sites(refs) == sites, refs
    for r in refs:  # never a comment, a doc comment or a string
        line = ts_engine.read_lines(r.path, r.line, r.line)
        assert not line.lstrip().startswith(("//", "#", "///")) and '"parse_query"' not in line


def test_a_go_package_call_is_told_apart_by_its_qualifier(ts_engine: RepoMap) -> None:
    refs = ts_engine.callers("go/cart/cart.go::Total")
    hows = {(r.path, r.line): r.how for r in refs}
    assert hows[("go/report/report.go", 8)] == "qualifier" and hows[("go/cart/cart.go", 11)] == "scope"


def test_treesitter_callees(ts_engine: RepoMap) -> None:
    assert [r.symbol_id for r in ts_engine.callees("go/report/report.go::Print")] == [
        "go/cart/cart.go::Total", "go/report/report.go::Total"]
    assert [r.symbol_id for r in ts_engine.callees("js/lib/app.js::App.handle")] == [
        "js/lib/app.js::App.onerror", "js/lib/context.js::onerror"]


def test_an_ambiguous_site_is_returned_apart_never_as_a_caller(tmp_path: Path) -> None:
    root = _write(tmp_path / "repo", {
        "a.js": "class A { run() { return 1 } }\nmodule.exports = A;\n",
        "b.js": "class B { run() { return 2 } }\nmodule.exports = B;\n",
        "main.js": "function go(x) { return x.run() }\n",
    })
    refs = RepoMap.open(root, cache_dir=tmp_path / "c", jobs=1).callers("a.js::A.run")
    assert _sites(refs) == set() and _sites(refs, resolved=False) == {("main.js", 1)}


def test_search_ranks_definitions_with_line_ranges(py_engine: RepoMap) -> None:
    hits = py_engine.search("why does the guard admit an amount?", limit=5)
    assert hits[0].symbol == "src/shop/guard.py::Guard.admit"
    assert (hits[0].line, hits[0].end_line, hits[0].kind) == (10, 14, "method")
    exact = py_engine.search("Seats", limit=3)
    assert exact[0].symbol == "src/shop/ledger.py::Seats"
    # the question's filler words match nothing (they used to match symbols named like them)
    assert py_engine.search("why does the", limit=5) == []


def test_jedi_is_asked_about_a_bounded_number_of_files_per_query(tmp_path: Path) -> None:
    """Each file jedi opens costs a parse and its imports' inference: past
    ``python_max_files`` a query judges the remaining sites by scope evidence (``+budget``),
    the definition's own file and its importers first, and still finds them."""
    files = {
        "pkg/__init__.py": "",
        "pkg/ledger.py": """
            class Ledger:
                def reserve(self, amount: int) -> int:
                    return amount


            def local() -> int:
                return Ledger().reserve(1)
            """,
    }
    for i in range(4):
        files[f"pkg/use{i}.py"] = f"""
            from pkg.ledger import Ledger


            def use{i}(ledger: Ledger) -> int:
                return ledger.reserve({i})
            """
    root = _write(tmp_path / "repo", files)
    everything = {("pkg/ledger.py", 7)} | {(f"pkg/use{i}.py", 5) for i in range(4)}

    def hows(max_files: int) -> dict[str, str]:
        cfg = EngineConfig(xref=XrefConfig(python_max_files=max_files))
        engine = RepoMap.open(root, config=cfg, cache_dir=tmp_path / f"cache{max_files}", jobs=1)
        refs = engine.callers("pkg/ledger.py::Ledger.reserve")
        assert _sites(refs) == everything
        return {r.path: r.how for r in refs}

    assert set(hows(8).values()) == {"jedi"}
    capped = hows(2)
    # the likeliest files first: the definition's own, then importers in path order
    assert capped["pkg/ledger.py"] == capped["pkg/use0.py"] == "jedi"
    assert all(capped[f"pkg/use{i}.py"].endswith("+budget") for i in (1, 2, 3))
    assert all(h.endswith("+budget") for h in hows(0).values())
