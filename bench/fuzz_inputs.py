"""The fuzzer's inputs: a zoo of repository trees and of YAML files, and the edge values it draws from.

Used by ``bench/fuzz_surfaces.py``. Every tree and file is made once per fuzzing run under its
sandbox; the generators of ``bench/fuzz_calls.py`` pick among them. Nothing here talks to
Temporal or runs the CLI.
"""

from __future__ import annotations

import math
import os
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_REPO = ROOT / "tests" / "fixtures" / "navigator_repo"

#: USD budgets as a user might type them (``--budget-usd``, ``navigator budget``)
BUDGETS = ["nan", "NaN", "inf", "-inf", "-1", "0", "-0", "1e-12", "5e-324", "1e308", "1e400", "abc", "", " ",
           "0.0000001", "0x10", "1_000", "+1", "0.5", "1", "10001", "1,5", "$1", "0.01", "1e-7", "2.5e3", "٣"]
#: token budgets (``--tokens``, ``repo-map --budget``)
TOKENS = ["0", "-1", "1", "25", "26", "27", "89", "90", "1000", "8192", "99999999999", "1e3", "abc", "", "2147483648",
          "9" * 30, "nan", "0x20", "+300", "007", " 100"]
#: positive integer options (``--max-iterations``, ``--limit``, ``--turn``, ``--max-stages``, ``--branches``)
INTS = ["0", "-1", "1", "2", "3", "4", "5", "12", "13", "1000", "1001", "99999999999999999999", "abc", "", "1.5",
        "nan", "1e2", "+2", "٢"]
#: ids of runs and batches that do not exist or are malformed
BAD_IDS = ["nav-does-not-exist", "ask-nope", "inv-nope", "batch-nope", "", " ", "../../etc/passwd", "a" * 1000,
           "nav-\x1b[31mred", "nav-日本", "-x", "--", "nav-x\ty", "%s%s%n", "nav-' OR '1'='1", "\u202enav",
           "x" * 300, "nav-\udcff"]
#: goals / questions / feedback texts
TEXTS = ["", " ", "-x", "-", "--", "--goal", "-w foo", "how is the budget enforced?", "where are tokens counted twice?",
         "日本語のゴール ✓ ünïcödé", "\x1b[31mred\x1b[0m\x07 bell", "tab\tnew\nline\rcr", "\u202eright-to-left",
         "a " * 5000, "x" * 60000, "\udcff\udcfe not utf-8", "$(touch /tmp/pwned) `id`", "{{7*7}} %s %n",
         "budget ledger reserve", "?", "\U0001f600" * 50, "NUL-free but \x7f del"]
MODELS = ["offline", "nonsense", "", "gemini-2.5-flash", "openai:gpt-x", "scripted:/no/such/file.yaml",
          "scripted:", "ollama:", ":", "offline ", "OFFLINE", "openrouter:a/b", "x" * 300]
PLANNING = ["auto", "direct", "off", "", "AUTO", "sometimes", "-1"]
MODES = ["interactive", "autonomous", "", "INTERACTIVE", "auto", "-x"]
STATUSES = ["running", "completed", "failed", "awaiting_approval", "", "nonsense", "RUNNING", "terminated",
            "timed_out", "continued_as_new", "canceled", "finalized"]


@dataclass
class Zoo:
    """The trees and files of one fuzzing run, by kind."""

    root: Path
    good_repo: Path
    trees: dict[str, Path] = field(default_factory=dict)
    #: kind ("plan", "profile", "jobs", "profiles", "stageplan", "config", "script") -> files
    files: dict[str, list[Path]] = field(default_factory=dict)
    missing: Path | None = None

    def tree(self, rng: random.Random) -> str:
        """A repository argument: mostly the trees of the zoo, sometimes a path of another shape."""
        roll = rng.random()
        if roll < 0.35:
            return str(self.good_repo)
        if roll < 0.9:
            return str(rng.choice(list(self.trees.values())))
        return rng.choice(["", "-", ".", "..", "/dev/null", str(self.missing), "~/nope", "a" * 5000,
                           "/nonexistent/\udcff", str(self.good_repo) + "/"])

    def file(self, kind: str, rng: random.Random) -> str:
        """A file argument of ``kind``; sometimes a file of another kind, a directory or nothing."""
        roll = rng.random()
        if roll < 0.8:
            return str(rng.choice(self.files[kind]))
        if roll < 0.9:
            return str(rng.choice(rng.choice(list(self.files.values()))))
        return rng.choice([str(self.missing), str(self.root), "", "/dev/null", str(self.trees["binary"] / "blob.bin")])


def _write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape"))
    return path


def build_trees(root: Path, huge_mb: int) -> dict[str, Path]:
    """Repository trees of every awkward shape (the good fixture repository is copied separately)."""
    t: dict[str, Path] = {}
    t["empty"] = root / "empty"
    t["empty"].mkdir(parents=True)
    t["file_not_dir"] = _write(root / "just-a-file.py", "x = 1\n")
    t["dir_loop"] = root / "dir-loop"
    _write(t["dir_loop"] / "a.py", "def a():\n    return 1\n")
    (t["dir_loop"] / "self").symlink_to("..")
    t["file_loop"] = root / "file-loop"
    _write(t["file_loop"] / "ok.py", "def ok():\n    pass\n")
    (t["file_loop"] / "loop1").symlink_to("loop2")
    (t["file_loop"] / "loop2").symlink_to("loop1")
    t["dangling"] = root / "dangling"
    _write(t["dangling"] / "m.py", "import os\n")
    (t["dangling"] / "gone.py").symlink_to("/nonexistent/target.py")
    (t["dangling"] / "escape").symlink_to("/etc")
    t["non_utf8"] = root / "non-utf8"
    _write(t["non_utf8"] / "fine.py", "def fine():\n    return 'ok'\n")
    _write(Path(os.fsdecode(bytes(t["non_utf8"]) + b"/caf\xe9_latin1.py")), "def cafe():\n    return 1\n")
    _write(Path(os.fsdecode(bytes(t["non_utf8"]) + b"/d\xff\xfe/x.py")), "y = 2\n")
    t["binary"] = root / "binary"
    rng = random.Random(3)
    _write(t["binary"] / "blob.bin", bytes(rng.randrange(256) for _ in range(65536)))
    _write(t["binary"] / "nul.py", b"def f():\n    return 1\x00\x00\n")
    _write(t["binary"] / "latin.py", b"s = '\xe9\xe8'\n")
    _write(t["binary"] / "bom.py", b"\xef\xbb\xbfdef bom():\n    pass\n")
    t["huge_file"] = root / "huge-file"
    _write(t["huge_file"] / "small.py", "def small():\n    return 0\n")
    _write(t["huge_file"] / "huge.py", ("def f%d():\n    return %d\n" % (0, 0)) * (huge_mb * 40_000))
    _write(t["huge_file"] / "one_line.js", "var a=" + "1+" * (huge_mb * 300_000) + "1;\n")
    t["weird_code"] = root / "weird-code"
    _write(t["weird_code"] / "syntax.py", "def broken(:\n  return\n")
    _write(t["weird_code"] / "deep.py", "x = " + "(" * 500 + "1" + ")" * 500 + "\n")
    _write(t["weird_code"] / "nested.py", "".join("    " * i + f"def f{i}():\n" for i in range(90)) + "    " * 90 + "pass\n")
    _write(t["weird_code"] / "unicode_名前.py", "def 名前():\n    return '✓'\n")
    _write(t["weird_code"] / "space name.ts", "export function f(): number { return 1 }\n")
    _write(t["weird_code"] / "-dash.go", "package main\nfunc main() {}\n")
    _write(t["weird_code"] / ".hidden.rs", "fn main() {}\n")
    _write(t["weird_code"] / "empty.py", "")
    _write(t["weird_code"] / "crlf.py", "def c():\r\n    return 1\r\n")
    t["only_ignored"] = root / "only-ignored"
    _write(t["only_ignored"] / ".gitignore", "*\n")
    _write(t["only_ignored"] / "a.py", "a = 1\n")
    t["many_small"] = root / "many-small"
    for i in range(300):
        _write(t["many_small"] / f"pkg{i % 7}" / f"m{i}.py", f"def f{i}(x):\n    return f{max(i - 1, 0)}(x)\n")
    # a root whose own path is not UTF-8: refused up front by every surface (it cannot travel as text)
    t["latin1_root"] = Path(os.fsdecode(bytes(root) + b"/caf\xe9-root"))
    _write(t["latin1_root"] / "src" / "a.py", "def alpha():\n    return 1\n")
    # named pipes: an open() of one blocks until a writer comes (a FIFO .gitignore once wedged every scan)
    t["fifos"] = root / "fifos"
    _write(t["fifos"] / "src" / "ok.py", "def ok():\n    return 1\n")
    os.mkfifo(t["fifos"] / ".gitignore")
    os.mkfifo(t["fifos"] / "src" / "pipe.py")
    (t["fifos"] / "src" / "link.py").symlink_to("pipe.py")
    return t


# ---- YAML files: valid seeds, mutated

SEEDS: dict[str, Any] = {
    "plan": {"token_budget": 2048, "default_level": 1, "rules": [{"glob": "src/**", "level": 2}],
             "focus_paths": [{"glob": "src/budgetkit/ledger.py", "weight": 2.0}],
             "focus_symbols": [{"symbol": "Ledger.reserve", "expand": True}], "goal": "budget",
             "exclude": ["tests/**"], "show_why": True, "pinned": []},
    "jobs": {"defaults": {"model": "offline", "token_budget": 1024, "max_iterations": 1},
             "jobs": [{"repo": "REPO", "goal": "how is the budget enforced?", "name": "one"}],
             "total_budget_usd": 1.0, "max_concurrency": 2},
    "stageplan": {"stages": [{"title": "a", "task": "look at the ledger", "criteria": ["ledger shown"],
                              "max_loops": 1}]},
    "profiles": {"helper": {"kind": "research", "caps": {"max_rounds": 2}}},
}


def _garbage(rng: random.Random, depth: int = 0) -> Any:
    """A random YAML value of any type."""
    choices: list[Any] = [None, True, False, 0, -1, 1, 2**63, -(2**70), 1.5, math.nan, math.inf, -math.inf, 1e-320,
                          "", "x", "nan", "-1", "\udcff"[:0] + "ü", "a" * 3000, "src/**", "/abs/**", "../up", "1e400"]
    if depth < 3 and rng.random() < 0.3:
        if rng.random() < 0.5:
            return [_garbage(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
        return {rng.choice(["glob", "level", "weight", "x", "", "1", "repo", "goal", "kind"]): _garbage(rng, depth + 1)
                for _ in range(rng.randrange(0, 4))}
    return rng.choice(choices)


def mutate(value: Any, rng: random.Random, rate: float) -> Any:
    """``value`` with some keys dropped, some values replaced by garbage, some unknown keys added."""
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            roll = rng.random()
            if roll < rate * 0.3:
                continue
            out[key] = _garbage(rng) if roll < rate else mutate(item, rng, rate)
        if rng.random() < rate * 0.3:
            out[rng.choice(["unknown", "colour", "", "1", "Token_Budget"])] = _garbage(rng)
        return out
    if isinstance(value, list):
        items = [mutate(v, rng, rate) for v in value if rng.random() > rate * 0.3]
        if rng.random() < rate * 0.3:
            items.append(_garbage(rng))
        return items
    return _garbage(rng) if rng.random() < rate else value


_BROKEN = ["{[", "key: [unclosed\n", "\t- tab: indent\n", "a: b: c\n", "- a\nb: c\n", "!!python/object:os.system x\n",
           "&a [*a]\n", "--- !!binary |\n  AAAA\n", "? complex\n: key\n", "%YAML 9.9\n---\n", "'unterminated\n"]


def yaml_text(kind: str, rng: random.Random, repo: Path, config_base: str) -> str | bytes:
    """One file of ``kind``: a seed mutated, or broken YAML, empty, binary, a scalar, a huge list."""
    roll = rng.random()
    if roll < 0.08:
        return ""
    if roll < 0.16:
        return rng.choice(_BROKEN)
    if roll < 0.2:
        return bytes(rng.randrange(256) for _ in range(200))
    if roll < 0.26:
        return rng.choice(["42\n", "null\n", "[]\n", "{}\n", "just text\n", "- 1\n- 2\n", "nan\n", "~\n"])
    if kind == "config":
        section = rng.choice(["defaults", "log", "worker", "endpoints", "pricing", "model", "nonsense"])
        body = {section: mutate({"budget_usd": 1.0, "token_budget": 2048, "max_iterations": 2, "level": "info",
                                 "json_output": False, "max_concurrent_activities": 2}, rng, 0.6)}
        return config_base + yaml.safe_dump(body, allow_unicode=True)
    if kind == "script":
        steps = mutate([{"action": "update_flight_plan", "reasoning": "zoom",
                         "updates": {"set_rules": [{"glob": "src/**", "level": 3}]}},
                        {"action": "finalize_context", "summary": "done"}], rng, 0.4)
        return yaml.safe_dump({"decisions": steps}, allow_unicode=True)
    if kind == "profile":
        seed = yaml.safe_load((ROOT / "examples" / "run-profile.yaml").read_text())
    else:
        seed = SEEDS[kind]
    value = mutate(seed, rng, rng.choice([0.0, 0.1, 0.3, 0.7]))
    if kind == "jobs" and isinstance(value, dict) and isinstance(value.get("jobs"), list):
        for job in value["jobs"]:
            if isinstance(job, dict) and job.get("repo") == "REPO":
                job["repo"] = str(repo)
        if rng.random() < 0.1:
            value["jobs"] = value["jobs"] * rng.choice([50, 2000])
    try:
        return yaml.safe_dump(value, allow_unicode=True)
    except yaml.YAMLError:
        return "{}\n"


def build_zoo(root: Path, rng: random.Random, per_kind: int, huge_mb: int, config_base: str) -> Zoo:
    """Trees and ``per_kind`` files of each YAML kind under ``root``."""
    good = root / "good-repo"
    shutil.copytree(FIXTURE_REPO, good)
    zoo = Zoo(root=root, good_repo=good, trees=build_trees(root / "trees", huge_mb), missing=root / "missing-path")
    for kind in ("plan", "profile", "jobs", "stageplan", "profiles", "config", "script"):
        folder = root / "files" / kind
        zoo.files[kind] = [_write(folder / f"{kind}-{i}.yaml", yaml_text(kind, rng, good, config_base))
                           for i in range(per_kind)]
    return zoo
