"""Words that never rank a file: English function words and commit-message filler.

A goal is language ("how does the navigator enforce the budget?", "fix a crash
when …"): ``the``, ``how``, ``does``, ``fix`` say nothing about *where* code
lives, and in a code base they mostly match comments and prose. The engine's
goal queries drop them (``why=bm25:the`` never happens); an identifier that is
one of them (``get``, ``set``) is still found through its whole name and the
identifier signal. The offline policy uses the same list.
"""

from __future__ import annotations

__all__ = ["STOPWORDS", "is_stopword"]

STOPWORDS: frozenset[str] = frozenset(
    """a an the and or not no nor but if then else when while of in on at to for from by with
    without into onto over under is are was were be been being it its this that these those
    there here as so than too very can could should would will shall may might must do does
    did done has have had having i we you they he she them our your their my me us
    all any some each every more most less least other such only own same just also now
    new old add adds added adding fix fixes fixed fixing make makes made use uses used using
    allow allows allowed support supports supported update updates updated improve improves
    improved change changes changed remove removes removed get gets set sets instead
    which what why how where who whom whose because about after before again against
    between both during few further once out up down off via per e g ie eg etc""".split()
)


def is_stopword(term: str) -> bool:
    """True for a lower-case term that never ranks a file."""
    return term in STOPWORDS
