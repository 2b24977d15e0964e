"""Generate a large synthetic multi-language source tree for the benchmark.

``python bench/gen_large_tree.py OUT_DIR [--files 20000] [--seed 7]``

The tree is a deterministic function of ``--seed`` and ``--files`` (same bytes
every run, on every machine): a monorepo of services, each with packages in
Python, TypeScript/TSX, JavaScript, Go, Java, Rust, C, C++ and Ruby plus some
Markdown/JSON/YAML. Files have log-normal sizes (median ~3.5 KB, a long tail up
to ~150 KB, like real repositories) and cross references: each file imports and
calls symbols defined in other files of the same language, chosen with a
Zipf-like bias so a few "core" modules are referenced by many files -- the
shape a reference-graph ranking has to cope with.

The generator only writes inside ``OUT_DIR`` and refuses a non-empty one.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["TreeSpec", "plan_tree", "render_file", "generate", "main"]

# Relative share of each language (by file count); "doc" covers md/json/yaml.
LANG_WEIGHTS: dict[str, float] = {
    "py": 30, "ts": 10, "tsx": 4, "js": 9, "go": 12, "java": 10,
    "rs": 6, "c": 5, "cpp": 4, "rb": 4, "doc": 6,
}
SIZE_MEDIAN_BYTES = 3500
SIZE_SIGMA = 0.9
SIZE_MIN, SIZE_MAX = 300, 150_000
SERVICES = 40
PACKAGES_PER_SERVICE = 12
ZIPF_EXPONENT = 1.1

# No word may be a keyword in any generated language: words become package,
# module and file names ("import", "match" would break Python / Rust paths).
WORDS = (
    "account budget token ledger cache index query parser render plan flight "
    "focus rank score graph node edge symbol reference imports module package "
    "config loader writer reader stream buffer batch worker queue task job "
    "schedule retry policy limit quota usage price model client server request "
    "response session user auth oauth secret vault store blob artifact hash "
    "digest chunk page cursor filter sort merge split join window frame event "
    "signal handler listener router route path file folder tree walk scan "
    "metric counter gauge timer trace span log record entry report summary "
    "detail status state machine transition guard check verify validate "
    "encode decode serialize format template layout widget panel view table "
    "column row cell value field key map list set item order invoice payment "
    "refund customer vendor product catalog search matcher ranker embed vector"
).split()


@dataclass
class FileSpec:
    """One planned file: where it goes, its language and the symbols it defines."""

    path: str
    lang: str
    target_bytes: int
    classes: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)


@dataclass
class TreeSpec:
    """The whole planned tree, before any file is rendered."""

    files: list[FileSpec]
    by_lang: dict[str, list[int]]


def _ident(rng: random.Random, parts: int) -> list[str]:
    return [rng.choice(WORDS) for _ in range(parts)]


def _snake(words: list[str]) -> str:
    return "_".join(words)


def _camel(words: list[str]) -> str:
    return "".join(w.capitalize() for w in words)


def _lower_camel(words: list[str]) -> str:
    c = _camel(words)
    return c[0].lower() + c[1:]


def _fn_name(lang: str, words: list[str]) -> str:
    if lang in ("py", "rs", "c", "rb", "cpp"):
        return _snake(words)
    if lang == "go":
        return _camel(words)
    return _lower_camel(words)


def _file_name(lang: str, words: list[str], cls: str) -> str:
    if lang == "java":
        return f"{cls}.java"
    if lang == "doc":
        return _snake(words) + random.Random(_snake(words)).choice([".md", ".json", ".yaml"])
    if lang in ("ts", "tsx", "js"):
        return _lower_camel(words) + "." + lang
    return _snake(words) + "." + lang


def plan_tree(n_files: int, seed: int) -> TreeSpec:
    """Decide every file's path, language, size and defined symbols."""
    rng = random.Random(seed)
    langs = list(LANG_WEIGHTS)
    weights = [LANG_WEIGHTS[k] for k in langs]
    files: list[FileSpec] = []
    seen: set[str] = set()
    while len(files) < n_files:
        lang = rng.choices(langs, weights)[0]
        svc = f"svc_{rng.randrange(SERVICES):02d}_{rng.choice(WORDS)}"
        pkg = f"{rng.choice(WORDS)}_{rng.randrange(PACKAGES_PER_SERVICE)}"
        sub = "" if rng.random() < 0.5 else f"/{rng.choice(WORDS)}"
        words = _ident(rng, rng.choice([1, 2, 2, 3]))
        cls = _camel(words) + rng.choice(["", "Service", "Manager", "Store", "Client"])
        path = f"{svc}/{lang if lang != 'doc' else 'docs'}/{pkg}{sub}/{_file_name(lang, words, cls)}"
        if path in seen:
            continue
        seen.add(path)
        size = int(rng.lognormvariate(math.log(SIZE_MEDIAN_BYTES), SIZE_SIGMA))
        spec = FileSpec(path, lang, max(SIZE_MIN, min(SIZE_MAX, size)))
        n_syms = max(1, spec.target_bytes // 700)
        spec.classes = [cls] + [_camel(_ident(rng, 2)) for _ in range(n_syms // 4)]
        spec.functions = [_fn_name(lang, _ident(rng, rng.choice([2, 3]))) for _ in range(n_syms)]
        files.append(spec)
    files.sort(key=lambda f: f.path)
    by_lang: dict[str, list[int]] = {}
    for i, f in enumerate(files):
        by_lang.setdefault(f.lang, []).append(i)
    return TreeSpec(files, by_lang)


def _pick_targets(rng: random.Random, spec: TreeSpec, me: int, k: int) -> list[FileSpec]:
    """Zipf-biased choice of other same-language files to import from."""
    pool = spec.by_lang.get(spec.files[me].lang, [])
    out: list[FileSpec] = []
    for _ in range(k):
        if len(pool) < 2:
            break
        rank = min(len(pool) - 1, int(rng.paretovariate(ZIPF_EXPONENT)) - 1)
        idx = pool[(rank * 7919) % len(pool)]  # scatter "popular" ranks over the tree
        if idx != me and spec.files[idx] not in out:
            out.append(spec.files[idx])
    return out


# Per-language templates. Keys: imp (import line), cls/cls_end (class frame),
# meth/fn (callable header, body indented by mi/fi), end_m/end_f (closers),
# stmt (one local assignment), ret (return), new/call (how a dep is invoked;
# filled with str.replace, not str.format, so their braces are literal).
SYNTAX: dict[str, dict[str, str]] = {
    "py": dict(
        imp="from {mod} import {name}\n", head='"""{doc}"""\n\nimport os\n',
        cls='\n\nclass {name}:\n    """{doc}"""\n', cls_end="",
        meth='\n    def {name}(self, {a}: int, {b}: str = "") -> str:\n        """{doc}"""\n',
        fn='\n\ndef {name}({a}: int, {b}: str = "") -> str:\n    """{doc}"""\n',
        end_m="", end_f="", mi="        ", fi="    ",
        stmt="{i}{v} = {call}\n", ret="{i}return str({v}) + {b}\n",
        new="{name}({a})", call="{name}({a}, {b})", cmt="{i}# {doc}\n"),
    "ts": dict(
        imp="import {{ {name} }} from '{rel}';\n", head="// {doc}\n",
        cls="\nexport class {name} {{\n", cls_end="}}\n",
        meth="  /** {doc} */\n  {name}({a}: number, {b}: string): string {{\n",
        fn="\n/** {doc} */\nexport function {name}({a}: number, {b}: string): string {{\n",
        end_m="  }}\n", end_f="}}\n", mi="    ", fi="  ",
        stmt="{i}const {v} = {call};\n", ret="{i}return String({v}) + {b};\n",
        new="new {name}({a})", call="{name}({a}, {b})", cmt="{i}// {doc}\n"),
    "go": dict(
        imp='import "corp.example/{dir}"\n', head="// Package {pkg}: {doc}\npackage {pkg}\n\n",
        cls="\n// {name} {doc}\ntype {name} struct {{\n\tID int\n\tName string\n}}\n", cls_end="",
        meth="\n// {name} {doc}\nfunc (r *{cls}) {name}({a} int, {b} string) string {{\n",
        fn="\n// {name} {doc}\nfunc {name}({a} int, {b} string) string {{\n",
        end_m="}}\n", end_f="}}\n", mi="\t", fi="\t",
        stmt="{i}{v} := {call}\n", ret="{i}return fmt.Sprint({v}) + {b}\n",
        new="{pkg}.{name}{ID: {a}}", call="{pkg}.{name}({a}, {b})", cmt="{i}// {doc}\n"),
    "java": dict(
        imp="import {jpkg}.{cls};\n", head="package {jpkg_me};\n\n",
        cls="\n/** {doc} */\npublic class {name} {{\n", cls_end="}}\n",
        meth="    /** {doc} */\n    public String {name}(int {a}, String {b}) {{\n",
        fn="    /** {doc} */\n    public static String {name}(int {a}, String {b}) {{\n",
        end_m="    }}\n", end_f="    }}\n", mi="        ", fi="        ",
        stmt="{i}var {v} = {call};\n", ret="{i}return String.valueOf({v}) + {b};\n",
        new="new {name}()", call="{cls}.{name}({a}, {b})", cmt="{i}// {doc}\n"),
    "rs": dict(
        imp="use crate::{rmod}::{name};\n", head="//! {doc}\n\n",
        cls="\n/// {doc}\npub struct {name} {{\n    pub id: i64,\n}}\n\nimpl {name} {{\n", cls_end="}}\n",
        meth="    /// {doc}\n    pub fn {name}(&self, {a}: i64, {b}: &str) -> String {{\n",
        fn="\n/// {doc}\npub fn {name}({a}: i64, {b}: &str) -> String {{\n",
        end_m="    }}\n", end_f="}}\n", mi="        ", fi="    ",
        stmt="{i}let {v} = {call};\n", ret="{i}format!(\"{{}}{{}}\", {v}, {b})\n",
        new="{name} { id: {a} }", call="{name}({a}, {b})", cmt="{i}// {doc}\n"),
    "c": dict(
        imp='#include "{hdr}"\n', head="/* {doc} */\n#include <stdio.h>\n",
        cls="\n/* {doc} */\nstruct {name} {{\n    int id;\n    const char *name;\n}};\n", cls_end="",
        meth="\n/* {doc} */\nint {cls_l}_{name}(struct {cls} *self, int {a}, const char *{b}) {{\n",
        fn="\n/* {doc} */\nint {name}(int {a}, const char *{b}) {{\n",
        end_m="}}\n", end_f="}}\n", mi="    ", fi="    ",
        stmt="{i}int {v} = {call};\n", ret="{i}return {v} + (int)strlen({b});\n",
        new="sizeof(struct {name})", call="{name}({a}, {b})", cmt="{i}/* {doc} */\n"),
    "cpp": dict(
        imp='#include "{hdr}"\n', head="// {doc}\n#include <string>\n",
        cls="\n/// {doc}\nclass {name} {{\n public:\n", cls_end="}};\n",
        meth="  /// {doc}\n  std::string {name}(int {a}, const std::string& {b}) {{\n",
        fn="\n/// {doc}\nstd::string {name}(int {a}, const std::string& {b}) {{\n",
        end_m="  }}\n", end_f="}}\n", mi="    ", fi="  ",
        stmt="{i}auto {v} = {call};\n", ret="{i}return std::to_string({v}) + {b};\n",
        new="{name}()", call="{name}({a}, {b})", cmt="{i}// {doc}\n"),
    "rb": dict(
        imp="require_relative '{rel}'\n", head="# {doc}\n",
        cls="\n# {doc}\nclass {name}\n", cls_end="end\n",
        meth="  # {doc}\n  def {name}({a}, {b})\n", fn="\n# {doc}\ndef {name}({a}, {b})\n",
        end_m="  end\n", end_f="end\n", mi="    ", fi="  ",
        stmt="{i}{v} = {call}\n", ret="{i}{v}.to_s + {b}\n",
        new="{name}.new({a})", call="{name}({a}, {b})", cmt="{i}# {doc}\n"),
}
SYNTAX["tsx"] = SYNTAX["ts"]
SYNTAX["js"] = {**SYNTAX["ts"],
                "meth": "  /** {doc} */\n  {name}({a}, {b}) {{\n",
                "fn": "\n/** {doc} */\nexport function {name}({a}, {b}) {{\n"}


def _doc(rng: random.Random) -> str:
    return " ".join(_ident(rng, rng.randint(4, 10))).capitalize() + "."


def _rel(frm: str, to: str, keep_ext: bool) -> str:
    a, b = frm.split("/")[:-1], to.split("/")
    common = 0
    while common < min(len(a), len(b) - 1) and a[common] == b[common]:
        common += 1
    parts = [".."] * (len(a) - common) + b[common:]
    rel = "/".join(parts) if parts[0] == ".." else "./" + "/".join(parts)
    return rel if keep_ext else rel.rsplit(".", 1)[0]


def _import_fields(me: FileSpec, dep: FileSpec, name: str) -> dict[str, str]:
    stem = dep.path.rsplit(".", 1)[0]
    return dict(
        name=name, mod=stem.replace("/", "."), rel=_rel(me.path, dep.path, False),
        dir=dep.path.rsplit("/", 1)[0], jpkg=dep.path.rsplit("/", 1)[0].replace("/", "."),
        cls=dep.classes[0], rmod=stem.replace("/", "::"), hdr=stem + ".h",
    )


def _callable(rng: random.Random, syn: dict[str, str], calls: list[str], method: bool,
              name: str, cls: str) -> str:
    a, b = _snake(_ident(rng, 1)) + "_n", _snake(_ident(rng, 1)) + "_s"
    ind = syn["mi"] if method else syn["fi"]
    out = [syn["meth" if method else "fn"].format(
        name=name, cls=cls, cls_l=cls.lower(), a=a, b=b, doc=_doc(rng))]
    var = "acc"
    for n in range(rng.randint(2, 8)):
        var = f"v{n}_{rng.choice(WORDS)}"
        if rng.random() < 0.25:
            out.append(syn["cmt"].format(i=ind, doc=_doc(rng)))
        call = calls[rng.randrange(len(calls))] if calls else a
        out.append(syn["stmt"].format(i=ind, v=var, call=call.replace("{a}", a).replace("{b}", b)))
    out.append(syn["ret"].format(i=ind, v=var, b=b))
    out.append(syn["end_m" if method else "end_f"].format())
    return "".join(out)


def _fill(tmpl: str, **values: str) -> str:
    for key, value in values.items():
        tmpl = tmpl.replace("{" + key + "}", value)
    return tmpl


def _dep_calls(spec: TreeSpec, me: int, rng: random.Random) -> tuple[list[str], list[str]]:
    """Import lines and call templates (with {a}/{b} left open) for one file."""
    f = spec.files[me]
    syn = SYNTAX[f.lang]
    imports: list[str] = []
    calls: list[str] = []
    for dep in _pick_targets(rng, spec, me, rng.randint(2, 8)):
        pkg = dep.path.rsplit("/", 2)[-2]
        use_cls = rng.random() < 0.4
        name = dep.classes[0] if use_cls else rng.choice(dep.functions)
        imports.append(syn["imp"].format(**_import_fields(f, dep, name)))
        tmpl = syn["new"] if use_cls else syn["call"]
        calls.append(_fill(tmpl, name=name, pkg=pkg, cls=dep.classes[0]))
    # also call own functions so in-file references exist
    calls += [_fill(syn["call"], name=fn, pkg="", cls=f.classes[0]).lstrip(".")
              for fn in f.functions[:3]]
    return sorted(set(imports)), calls


def _render_doc_file(f: FileSpec, rng: random.Random) -> str:
    if f.path.endswith(".json"):
        data = {w: {"enabled": rng.random() < 0.5, "limit": rng.randrange(1000)}
                for w in sorted({rng.choice(WORDS) for _ in range(max(2, f.target_bytes // 60))})}
        return json.dumps(data, indent=2, sort_keys=True) + "\n"
    lines: list[str] = []
    size = 0
    while size < f.target_bytes:
        line = (f"{rng.choice(WORDS)}_{rng.randrange(99)}: {_doc(rng)}\n"
                if f.path.endswith(".yaml") else f"## {_camel(_ident(rng, 2))}\n\n{_doc(rng)} {_doc(rng)}\n\n")
        lines.append(line)
        size += len(line)
    return "".join(lines)


def render_file(spec: TreeSpec, me: int, seed: int) -> str:
    """The text of file ``me``; depends only on the plan, the index and the seed."""
    f = spec.files[me]
    rng = random.Random(f"{seed}:{f.path}")
    if f.lang == "doc":
        return _render_doc_file(f, rng)
    syn = SYNTAX[f.lang]
    pkg = f.path.rsplit("/", 2)[-2]
    imports, calls = _dep_calls(spec, me, rng)
    parts = [syn["head"].format(doc=_doc(rng), pkg=pkg,
                                jpkg_me=f.path.rsplit("/", 1)[0].replace("/", "."))]
    parts += imports
    if f.lang == "cpp":
        parts.append("\nnamespace corp {\n")
    size = sum(map(len, parts))
    classes, fns = list(f.classes), list(f.functions)
    if f.lang == "java":  # one top-level class per file; functions become static methods
        parts.append(syn["cls"].format(name=f.classes[0], doc=_doc(rng)))
    while size < f.target_bytes and (classes or fns):
        if classes and (f.lang != "java" or not fns) and (rng.random() < 0.35 or not fns):
            chunk = _class_chunk(rng, syn, f, classes.pop(0), calls)
        else:
            chunk = _callable(rng, syn, calls, False, fns.pop(0), f.classes[0])
        parts.append(chunk)
        size += len(chunk)
    if f.lang == "java":
        parts.append(syn["cls_end"].format())
    if f.lang == "cpp":
        parts.append("}  // namespace corp\n")
    return "".join(parts)


def _class_chunk(rng: random.Random, syn: dict[str, str], f: FileSpec, name: str,
                 calls: list[str]) -> str:
    out = [syn["cls"].format(name=name, doc=_doc(rng))]
    for _ in range(rng.randint(1, 4)):
        meth = _fn_name(f.lang, _ident(rng, 2))
        out.append(_callable(rng, syn, calls, True, meth, name))
    out.append(syn["cls_end"].format())
    return "".join(out)


def generate(out: Path, n_files: int, seed: int) -> dict[str, int]:
    """Write the tree under ``out``; returns counts per language and total bytes."""
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} is not empty; pass a new or empty directory")
    spec = plan_tree(n_files, seed)
    stats: dict[str, int] = {"files": 0, "bytes": 0}
    for i, f in enumerate(spec.files):
        text = render_file(spec, i, seed)
        path = out / f.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        stats["files"] += 1
        stats["bytes"] += len(text.encode())
        stats[f"lang:{f.lang}"] = stats.get(f"lang:{f.lang}", 0) + 1
    return stats


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    p = argparse.ArgumentParser(description="Generate a deterministic large source tree.")
    p.add_argument("out", type=Path, help="new or empty output directory")
    p.add_argument("--files", type=int, default=20_000, help="number of files (default 20000)")
    p.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    args = p.parse_args(argv)
    if args.files <= 0:
        raise SystemExit("--files must be a positive number of files")
    t0 = time.perf_counter()
    stats = generate(args.out, args.files, args.seed)
    stats["seconds_x1000"] = int((time.perf_counter() - t0) * 1000)
    print(json.dumps(stats, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
