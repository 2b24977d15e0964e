"""The skeleton parse against the whole-file parse on every Python file under some folders.

    .venv/bin/python bench/skeleton_check.py ROOT [ROOT ...]

For each ``.py`` / ``.pyi`` file (UTF-8) it compares the outline of ``parse_python(text,
whole=True)`` with the outline of the skeleton's parse (``skeleton(text)`` parsed whole, the
file's own lines; the whole file when there is no skeleton or the parser refuses it): error,
every symbol (name, kind, spans, signature, docstring, depth) and the imports. Prints the
files that differ (a whole-file error the skeleton hides is listed apart: what the skeleton is
documented to do) and one summary line with the counts and the CPU seconds of each side.
Exit code 1 when any file differs otherwise.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

from durable_navigator.repomap.parse_python import parse_python
from durable_navigator.repomap.parsed import ParsedFile
from durable_navigator.repomap.py_skeleton import skeleton


def _outline(p: ParsedFile) -> tuple:
    return p.error, [repr(s) for s in p.symbols], p.imports


def main(roots: list[str]) -> int:
    warnings.simplefilter("ignore")
    files = differ = hidden = whole = refused = 0
    t_whole = t_skel = t_parse = 0.0
    for root in roots:
        for folder, _dirs, names in os.walk(root):
            for name in names:
                if not name.endswith((".py", ".pyi")):
                    continue
                path = os.path.join(folder, name)
                try:
                    with open(path, encoding="utf-8") as f:
                        text = f.read()
                except (OSError, UnicodeDecodeError):
                    continue
                files += 1
                t0 = time.process_time()
                want = parse_python(text, whole=True)
                t1 = time.process_time()
                cut = skeleton(text)
                t2 = time.process_time()
                if cut is None:
                    whole += 1
                    got = parse_python(text, whole=True)
                else:
                    got = parse_python(cut, text.splitlines(), whole=True)
                    if got.error:
                        refused += not want.error
                        got = parse_python(text, whole=True)
                t3 = time.process_time()
                t_whole, t_skel, t_parse = t_whole + t1 - t0, t_skel + t2 - t1, t_parse + t3 - t2
                if _outline(want) != _outline(got):
                    if want.error and not got.error:
                        hidden += 1
                        print(f"error hidden in a cut body: {path}")
                    else:
                        differ += 1
                        print(f"DIFFERS: {path}")
    print(f"{files} files: {differ} differ, {hidden} whole-file errors hidden in cut bodies, {whole} parsed whole, "
          f"{refused} skeletons refused; CPU whole-file parse {t_whole:.2f} s, skeleton {t_skel:.2f} s + "
          f"its parse {t_parse:.2f} s")
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: skeleton_check.py ROOT [ROOT ...]")
    sys.exit(main(sys.argv[1:]))
