"""The layering is checked, not hoped for: import-linter contracts (pyproject.toml) and no import cycle.

* ``navtypes`` (the shared vocabulary) imports nothing of the project;
* ``navcore`` (the shared model package) imports only ``navtypes``; ``repomap`` likewise;
* workflows reach activities only by name; activities never import workflows, the worker or the CLI;
* no module takes part in an import cycle, anywhere.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def _root_packages() -> list[str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]


def test_import_linter_contracts_are_kept() -> None:
    proc = subprocess.run([str(Path(sys.executable).with_name("lint-imports")), "--no-cache"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_every_installed_package_is_under_a_contract() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    installed = set(project["tool"]["setuptools"]["package-dir"])
    assert installed == set(_root_packages())


def test_every_package_folder_is_listed_for_setuptools() -> None:
    """setuptools installs only the packages it lists: an unlisted folder works in an editable install
    and is missing from the wheel (a wheel lacked ``navcore/evaluation`` and ``activities/evaluation``,
    which ``navigator eval`` imports)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {
        package + "".join("." + part for part in init.parent.relative_to(ROOT / folder).parts)
        for package, folder in setuptools["package-dir"].items()
        for init in (ROOT / folder).rglob("__init__.py")
    }
    assert sorted(folders - set(setuptools["packages"])) == []


def test_no_module_is_part_of_an_import_cycle() -> None:
    graph = grimp.build_graph(*_root_packages())
    cycles = sorted({
        tuple(sorted((importer, imported)))
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        if graph.chain_exists(importer=imported, imported=importer)
    })
    assert cycles == []
