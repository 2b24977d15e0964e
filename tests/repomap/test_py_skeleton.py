"""The skeleton (function bodies the outline never reads, cut) parses to the outline the whole file does."""

from __future__ import annotations

import sysconfig
import textwrap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from durable_navigator.repomap.parse_python import parse_python
from durable_navigator.repomap.py_skeleton import skeleton

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PAD = "\n" + "# padding so the file is long enough to be cut\n" * 60  # MIN_SKELETON_CHARS


def _outline(text: str, whole: bool) -> tuple:
    got = parse_python(text, whole=whole)
    return got.error, [repr(s) for s in got.symbols], got.imports


def _same(text: str) -> str:
    """Assert the skeleton's outline is the whole file's; return the skeleton (which must exist)."""
    cut = skeleton(text)
    assert cut is not None, "nothing was cut: the case does not test the skeleton"
    assert cut.count("\n") == text.count("\n")
    assert _outline(text, whole=False) == _outline(text, whole=True)
    return cut


CASES = {
    "strings, brackets and continuations dedented inside bodies": '''
        import os
        from . import sibling

        class Parser(Base, metaclass=Meta):
            """Doc."""
            LIMIT: int = 3

            def method(self, a: int = 1, *args, **kw) -> "Parser":
                """Method doc
                on two lines."""
                text = """
        def not_a_function():
            pass
        class NotAClass:
        """
                call(a,
        b)
                x = 1 + \\
        2
                return text  # a comment with a quote: don't

            # a comment between methods, dedented
        # and one at column 0
            @property
            @functools.wraps(f,
                             assigned=("a",))
            def prop(
                self,
                b="#not a comment",
            ):
                s = "([{"; t = ')]}'
                return f"{s!r} {d['k']}"
            after_methods = 2
        ''',
    "first statements that are compound or decorated": '''
        class C:
            def a(self):
                try:
                    x = 1
                except ValueError as exc:
                    x = 2
                else:
                    x = 3
                finally:
                    pass
                return x

            def b(self):
                @decorator
                @other(1)
                def inner():
                    """Inner doc."""
                    return 1
                y = inner()
                return y

            def c(self):
                if a:
                    pass
                elif b:
                    pass
                else:
                    pass
                for i in x:
                    pass
                else:
                    pass
                while False:
                    pass
                return 0

            async def d(self):
                async with lock:
                    await thing()
                match self.x:
                    case 1:
                        return 1
                    case _:
                        return 2
        ''',
    "top-level functions keep their definitions and annotated names": '''
        def top(a, b=2):
            """Top doc."""
            first = 1
            second = 2
            total: int = a + b
            if first:
                def hidden():  # under an if: not a symbol
                    return 1
            def helper(x):
                """Helper doc."""
                y = x * 2
                return y
            class Local:
                field: str = "x"
                def meth(self):
                    z = 1
                    return z
            print(helper(total))
            return helper(total) + \\
                first

        if sys.platform == "win32":
            def platform_only():
                a = 1
                b = 2
                return a + b
        else:
            def platform_only():
                return 0

        for name in ():
            def in_a_loop():
                q = 1
                return q

        def größe(länge: int):
            breite: int = länge
            höhe = 2
            return breite * höhe

        def one_liner(): return 1
        async def coro():
            await a()
            await b()
        ''',
    "a method nested in a method and a class nested in a function": '''
        class Outer:
            class Inner:
                def deep(self):
                    def deeper():
                        class InFunction:
                            def m(self):
                                return 1
                        return InFunction
                    return deeper
            def last(self):
                value = 1
                return (value,
                        value)
        # trailing comment''',
}


def test_crafted_cases_parse_alike_and_are_cut() -> None:
    for name, source in CASES.items():
        text = textwrap.dedent(source) + PAD
        cut = _same(text)
        assert len(cut) < len(text), name


def test_a_method_body_is_cut_to_its_first_statement_and_a_pass_on_its_last_line() -> None:
    text = textwrap.dedent('''
        class C:
            def m(self):
                """Doc."""
                a = 1
                b = (2,
                     3)
            x = 1
        ''') + PAD
    cut = _same(text).split("\n")
    assert cut[1:9] == ["class C:", "    def m(self):", '        """Doc."""', "", "", "        pass", "    x = 1", ""]


def test_a_syntax_error_inside_a_cut_body_no_longer_hides_the_outline() -> None:
    text = textwrap.dedent('''
        class Legacy:
            def show(self):
                self.ready = True
                print "python 2"
        ''') + PAD
    assert parse_python(text, whole=True).error
    got = parse_python(text)
    assert got.error is None and [s.qualname for s in got.symbols] == ["Legacy", "Legacy.show"]
    broken = text + "print 'at module level'\n"
    assert parse_python(broken).error == parse_python(broken, whole=True).error == "python syntax error: SyntaxError"


def test_files_the_lexing_is_unsure_of_are_parsed_whole() -> None:
    body = "class C:\n    def m(self):\n        a = 1\n        return a\n" + PAD
    assert skeleton(body) is not None
    assert skeleton("x = 1\n" * 10) is None  # short
    for unsure in (body.replace("a = 1", "a = 1\t"), body.replace("a = 1", "a = 1\f"),
                   body.replace("\n", "\r\n"), body.replace("a = 1", "a = 'open"), body.replace("a = 1", "a = (1")):
        assert skeleton(unsure) is None, repr(unsure[:60])


# ---- generated programs: nested blocks with strings, brackets and continuations --------------

_SIMPLE = st.sampled_from([
    "x = 1", "x: int = 2", "y = (1,\n2)", "z = '''\nno def f():\n'''", "w = 'a' \\\n'b'", "pass",
    "print('#', \"(\")", "v = [i for i in (\n1, 2)]", "s = f\"{x!r}\"", "del x", "t: list[\nint] = []",
    "# just a comment", "q = {'k': '\"'}", "u = b'\\x00'",
])
_NAMES = st.sampled_from(["a", "b", "go", "run", "Item", "_p"])


@st.composite
def _block(draw: st.DrawFn, level: int, depth: int) -> list[str]:
    pad = "    " * level
    out: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["simple", "simple", "def", "class", "if", "try", "doc"] if depth < 3 else
                                    ["simple", "doc"]))
        if kind == "simple":
            for part in draw(_SIMPLE).split("\n"):
                out.append(pad + part if not part.startswith(("no def", "'''", "int]", "1, 2", "'b'", "2)"))
                           else part)  # a string's or a bracket's continuation, dedented
        elif kind == "doc":
            out.append(pad + '"""Doc\nwith a dedented line."""')
        elif kind in ("def", "class"):
            if draw(st.booleans()):
                out.append(pad + "@decorate(1,\n" + pad + "          2)")
            head = "async def" if kind == "def" and draw(st.booleans()) else kind
            args = "(self, a=1,\n" + pad + "    b: int = 2)" if kind == "def" else "(Base)"
            out.append(f"{pad}{head} {draw(_NAMES)}{args}:")
            out += draw(_block(level + 1, depth + 1))
        elif kind == "if":
            out.append(pad + "if x:")
            out += draw(_block(level + 1, depth + 1))
            out.append(pad + "else:")
            out += draw(_block(level + 1, depth + 1))
        else:
            out.append(pad + "try:")
            out += draw(_block(level + 1, depth + 1))
            out.append(pad + "except E:")
            out += draw(_block(level + 1, depth + 1))
    if all(line.strip().startswith("#") for line in out):
        out.append(pad + "pass")
    return out


@settings(max_examples=150, deadline=None)
@given(program=_block(0, 0))
def test_generated_programs_parse_alike(program: list[str]) -> None:
    text = "\n".join(program) + "\n" + PAD
    assert _outline(text, whole=False) == _outline(text, whole=True)


def test_the_standard_library_parses_alike() -> None:
    """Every module of the standard library's top level and of a few packages (the whole
    standard library and this machine's site-packages were checked when the skeleton was made)."""
    paths = sorted(STDLIB.glob("*.py")) + sorted(STDLIB.glob("asyncio/*.py")) + sorted(STDLIB.glob("email/*.py"))
    cut = 0
    for path in paths:
        try:
            text = path.read_text("utf-8")
        except UnicodeDecodeError:
            continue
        assert _outline(text, whole=False) == _outline(text, whole=True), path
        cut += skeleton(text) is not None
    assert len(paths) > 200 and cut > len(paths) / 2
