"""The CLI's two consoles and their one wrapping rule.

On a terminal, prose is word-wrapped to its width; piped, every logical line stays
one line (greppable, nothing cut at an assumed 80 columns). Lines a user copies
— Web UI links, paths, ids — are printed with ``soft_wrap=True`` so they are never
broken by rich; panels with :func:`cli.display.print_block`, word-wrapped, never cropped.
"""

from __future__ import annotations

from rich.console import Console

__all__ = ["CliConsole", "stdout", "stderr"]


class CliConsole(Console):
    """A rich console whose default ``soft_wrap`` is "not a terminal" (checked at each print)."""

    @property  # type: ignore[override]
    def soft_wrap(self) -> bool:
        return not self.is_terminal

    @soft_wrap.setter
    def soft_wrap(self, value: bool) -> None:
        # rich's constructor assigns it; the rule above always decides
        pass


#: human output; --json output bypasses rich entirely
stdout = CliConsole(highlight=False)
#: errors and progress; stdout stays clean for --json
stderr = CliConsole(stderr=True, highlight=False)
