"""``navigator gc``'s signature and help (standard library + typer only; the body: :mod:`cli.gc_run`)."""

from __future__ import annotations

from typing import Annotated

import typer

from durable_navigator.cli.lazy import command_group
from durable_navigator.cli.options import JsonOpt

__all__ = ["gc_app", "DEFAULT_OLDER_THAN"]

#: the age guard's default: longer than any run's activity, so an in-flight run's fresh blobs stay
DEFAULT_OLDER_THAN = "7d"

gc_app = command_group(help="Delete artifacts no run references.")


@gc_app.command()
def gc(
    ctx: typer.Context,
    older_than: Annotated[str, typer.Option("--older-than", metavar="AGE",
                                            help="Delete only blobs last stored longer ago than this (s, m, h, d: "
                                                 "7d, 12h, 30m; 0s deletes every unreferenced blob: only when no run "
                                                 "is in flight).")] = DEFAULT_OLDER_THAN,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be deleted; delete nothing.",
                                                      show_default="off")] = False,
    caches: Annotated[bool, typer.Option("--caches", help="Prune this host's cache of snapshot trees and git "
                                                          "mirrors instead: trees no run used for --older-than, "
                                                          "blobs and mirrors no remaining tree uses.",
                                         show_default="off")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Delete the artifact store's blobs that no run references.

    Referenced: named anywhere in the event history of a run Temporal still shows in this namespace
    (running, or closed within the namespace's retention), or inside a referenced blob (a stored
    request naming the one before it). Blobs listed before the histories are read, and only those last
    stored before --older-than, go: a run in flight keeps what it just stored. Works on the local
    directory and on an S3-compatible bucket (its <prefix>/<namespace>/ only).

    With --caches: this host's cache of snapshot trees and git checkouts instead (trees unused for
    --older-than, the blobs and mirrors no remaining tree uses); no Temporal or store is needed.
    """
    if caches:
        from durable_navigator.cli.gc_run import run_cache_gc

        run_cache_gc(older_than=older_than, dry_run=dry_run, json_out=json_out)
        return
    from durable_navigator.cli.gc_run import run_gc

    run_gc(ctx=ctx, older_than=older_than, dry_run=dry_run, json_out=json_out)
