"""File names as the engine shows them, and back to the names on disk.

POSIX file names are bytes. Python hands a name that is not valid UTF-8 to us
as a ``str`` with lone surrogates (``surrogateescape``), and such a string
cannot be encoded: not by the token counter, not into JSON (Temporal payloads,
``report.json``), not into ``context.md``. A name with a control character (a
newline, a tab) can be encoded, but printed into a map it would break the
map's one-line-per-file layout.

So every path the engine lists is its *display* form: the name itself when it
is printable UTF-8 (nearly always), otherwise the name with every byte that is
not valid UTF-8, every C0 control character, DEL, the line breaks ``str.splitlines``
knows (NEL, U+2028, U+2029) and every backslash written as ``\\xNN`` --
``caf\\xe9_latin1.py`` for a Latin-1 ``café_latin1.py``. The
display form is valid UTF-8 everywhere; :func:`fs_name` maps it back to the
name on disk, so the tools, the renderer and the index all read the right file.

Two names can show the same: ``caf\\xe9.py`` may also be a file literally named
so. The literal name wins (:func:`fs_name` tries it first) and discovery skips
the other one as ``name_clash``; a display form that does not map back to its
name is skipped as ``undecodable_name`` (it cannot happen with the scheme above,
but the check is what makes the mapping trustworthy).
"""

from __future__ import annotations

import os
import re

__all__ = ["display_name", "fs_name", "fs_path", "round_trips", "is_utf8"]

#: bytes a display form writes as ``\xNN`` once it is not plain text: C0 controls, DEL, the
#: backslash (so escapes read back unambiguously) and the line breaks ``str.splitlines`` knows
#: beyond those (NEL, U+2028, U+2029 in UTF-8)
_ESCAPED_BYTES = re.compile(rb"[\x00-\x1f\x7f\\]|\xc2\x85|\xe2\x80[\xa8\xa9]")
_BREAKS = frozenset("\x7f\x85\u2028\u2029")
_ESCAPE = re.compile(r"\\x([0-9a-f]{2})")


def is_utf8(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8: False for a name (or a command-line argument) decoded with
    ``surrogateescape`` from bytes that were not valid UTF-8 (they arrive as lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def display_name(name: str) -> str:
    """The printable, UTF-8-encodable form of a file name (itself when it already is one)."""
    if name.isprintable():
        # printable text has no lone surrogates (category Cs) and no controls
        return name
    if not _needs_escape(name):
        return name  # e.g. a no-break space: not "printable" to Python, yet plain text
    raw = os.fsencode(name)
    raw = _ESCAPED_BYTES.sub(lambda m: b"".join(b"\\x%02x" % b for b in m.group()), raw)
    return raw.decode("utf-8", "backslashreplace")


def _needs_escape(name: str) -> bool:
    return any(("\udc80" <= ch <= "\udcff") or ch < " " or ch in _BREAKS for ch in name)


def fs_name(display: str) -> str:
    """The name on disk a display form stands for (without looking at the disk).

    A display form without ``\\x`` escapes is the name itself. Otherwise the
    escapes are undone -- but only when that gives a name whose display form is
    ``display`` again; a name that merely contains ``\\x41`` stays literal.
    """
    if "\\x" not in display:
        return display
    raw = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(display):
        raw += display[pos:m.start()].encode("utf-8", "surrogateescape")
        raw.append(int(m.group(1), 16))
        pos = m.end()
    raw += display[pos:].encode("utf-8", "surrogateescape")
    name = os.fsdecode(bytes(raw))
    return name if display_name(name) == display else display


def fs_path(root: str | os.PathLike[str], display: str) -> str:
    """The full path on disk of the file ``display`` names under ``root``.

    The literal name wins when both it and the unescaped name could be meant
    (discovery never lists the unescaped one then: see ``name_clash``).
    """
    literal = f"{os.fspath(root)}/{display}"
    name = fs_name(display)
    if name == display or os.path.lexists(literal):
        return literal
    return f"{os.fspath(root)}/{name}"


def round_trips(name: str) -> bool:
    """Whether ``name``'s display form maps back to ``name`` exactly."""
    return fs_name(display_name(name)) == name
