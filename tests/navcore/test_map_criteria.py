"""Criteria about the map are read from the criterion and checked against the render (#29)."""

from __future__ import annotations

from durable_navigator.navcore.navigator.map_criteria import check_map_criterion, literal_pattern, map_claim
from durable_navigator.navtypes.mapmeta import FileSummary

MAP = """# repo-map {"budget":5000}
Pipfile [L4 24B 2L] why=pagerank
```
[packages]
verify = "*"
```
src/pkg/net.py [L1 112B 5L] why=bm25
src/pkg/ledger.py [L2 56B 3L] why=pagerank
class Ledger:  # 1
    def charge(self, n)  # 2
src/pkg/tls.py [L4 40B 2L] why=bm25
```
def insecure(url):
    return get(url, verify = False)
```
"""
FILES = [FileSummary(path="Pipfile", level=4, requested_level=4, tokens=9),
         FileSummary(path="src/pkg/net.py", level=1, requested_level=1, tokens=5),
         FileSummary(path="src/pkg/ledger.py", level=2, requested_level=2, tokens=20, focused=True),
         FileSummary(path="src/pkg/tls.py", level=4, requested_level=4, tokens=20),
         FileSummary(path="docs/x.md", level=0, requested_level=0, tokens=0)]


def _check(criterion: str):  # type: ignore[no-untyped-def]
    out = check_map_criterion(criterion, FILES, MAP)
    assert out is not None, criterion
    return out


def test_a_path_at_a_level_is_read_from_the_per_path_levels() -> None:
    met = _check("`src/pkg/ledger.py` is shown at level 2 or more")
    assert met.status == "met" and met.evidence == ["src/pkg/ledger.py at L2 (focus)"]
    low = _check("`src/pkg/net.py` is shown at level 2 or more")
    assert low.status == "not_met" and low.evidence == [] and "src/pkg/net.py at L1" in low.note
    assert _check("src/pkg/net.py is visible").status == "met"  # a bare path, any level that shows it
    assert _check("`src/pkg/tls.py` is expanded").status == "met"
    assert _check("`src/pkg/ledger.py` is in focus").status == "met"
    assert _check("`src/pkg/tls.py` is in focus").status == "not_met"
    assert _check("`docs/x.md` is hidden").status == "met"
    assert _check("`src/pkg/` is shown at L2+").status == "met"  # a folder: one of its files suffices
    assert _check("`src/missing.py` is shown").status == "not_met"
    assert _check("`ledger.py` is shown at level 2").evidence == ["src/pkg/ledger.py at L2 (focus)"]  # a bare name


def test_names_are_matched_as_code_not_as_words() -> None:
    """'verify (Pipfile)' is no evidence for `verify=False`; the literal is found token by token."""
    lit = _check("`verify=False` is shown at level 2 or more")
    assert lit.status == "met" and lit.evidence == ["verify=False in src/pkg/tls.py at L4"]
    pat = literal_pattern("verify=False")
    assert not pat.search('verify = "*"') and not pat.search("verify_ssl=False") and pat.search("verify=False)")
    sym = _check("`Ledger.charge` is visible")
    assert sym.status == "met" and sym.evidence == ["Ledger.charge in src/pkg/ledger.py at L2"]
    assert _check("`charge_all` is visible").status == "not_met"  # `charge` is in the map, `charge_all` is not


def test_what_the_map_cannot_show_stays_unchecked_and_non_map_criteria_are_not_claims() -> None:
    partial = _check("`verify=False` is shown and the reason for disabling TLS is explained")
    assert partial.status == "unchecked" and partial.evidence == ["verify=False in src/pkg/tls.py at L4"]
    failed = _check("`src/pkg/net.py` is shown at level 3 and its retry policy is explained")
    assert failed.status == "not_met"  # the checkable part fails: not met whatever the rest says
    assert map_claim("The map shows the code that answers the goal in detail (level 2 or more).") is None
    assert map_claim("the function that parses option values is cited") is None
