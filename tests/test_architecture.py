"""The architecture stays true: import contracts, offline-only code, documented commands."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT


def test_import_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    r = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "broken" not in r.stdout.lower() or " 0 broken" in r.stdout.lower()


# -- the contracts break when they should: a forbidden import added to a scratch copy ------------

LINT = Path(sys.executable).parent / "lint-imports"
CONTRACT_IDS = {c["name"]: c["id"] for c in
                tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]}


def _scratch(tmp_path: Path) -> Path:
    """The package and the import-linter config, copied, so an added import changes only the copy."""
    root = tmp_path / "scratch"
    shutil.copytree(ROOT / "workbench", root / "workbench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def _contracts(root: Path) -> dict[str, str]:
    """lint-imports run on the copy in ``root``: {contract id: "KEPT" or "BROKEN"}."""
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "1000"}  # one line per contract
    r = subprocess.run([str(LINT), "--no-cache"], cwd=root, env=env, capture_output=True, text=True)
    status = {CONTRACT_IDS[m[1]]: m[2] for m in re.finditer(r"^(.+?) (KEPT|BROKEN)\b", r.stdout, flags=re.M)
              if m[1] in CONTRACT_IDS}
    assert set(status) == set(CONTRACT_IDS.values()), r.stdout + r.stderr
    assert r.returncode == (1 if "BROKEN" in status.values() else 0), r.stdout + r.stderr
    return status


def test_an_untouched_copy_keeps_every_contract(tmp_path):
    assert set(_contracts(_scratch(tmp_path)).values()) == {"KEPT"}


@pytest.mark.parametrize("module, line, broken", [
    ("service/exports.py", "import duckdb", {"duckdb-only-in-store"}),
    ("mcp/server.py", "import duckdb", {"duckdb-only-in-store"}),
    ("store/store.py", "from workbench.cli import main", {"layers"}),
    ("service/search.py", "import workbench.tui", {"layers"}),
    ("tui/app.py", "from workbench.mcp import server", {"layers"}),  # the two faces stay apart
    ("retrieval/index.py", "from workbench.ingest import files", {"layers"}),
    ("rank/fusion.py", "from workbench.store import Store", {"layers", "rank-is-pure"}),  # duckdb, indirectly
    ("models.py", "from workbench import config", {"layers"}),
    ("newthing.py", "from workbench import models", {"layers"}),  # exhaustive: a new module must be placed
    ("cli/commands.py", "from workbench.store.store import utcnow", {"faces-call-the-service"}),
    ("service/facade.py", "import textual", {"textual-only-in-tui"}),
    ("service/facade.py", "import mcp", {"mcp-only-in-mcp"}),
    ("rank/fusion.py", "import torch", {"rank-is-pure"}),
    ("policy/__init__.py", "import git", {"policy-is-pure"}),
])
def test_a_forbidden_import_breaks_its_contract(tmp_path, module, line, broken):
    root = _scratch(tmp_path)
    path = root / "workbench" / module
    path.write_text((path.read_text() if path.exists() else '"""Added by the test."""\n') + f"\n{line}\n")
    status = _contracts(root)
    assert {cid for cid, s in status.items() if s == "BROKEN"} == broken


def _subpackage_cycles(graph) -> list[tuple[str, str]]:
    children = sorted(graph.find_children("workbench"))
    return [(a, b) for a, b in itertools.combinations(children, 2)
            if graph.chain_exists(a, b, as_packages=True) and graph.chain_exists(b, a, as_packages=True)]


def test_no_import_cycles_between_subpackages():
    """Implied by the layers contract today; stated on its own so loosening a layer cannot allow one."""
    import grimp

    graph = grimp.build_graph("workbench", cache_dir=None)
    assert _subpackage_cycles(graph) == []
    graph.add_import(importer="workbench.store.store", imported="workbench.service.facade")
    assert ("workbench.service", "workbench.store") in _subpackage_cycles(graph)  # the check can see one


def _module_cycles(graph) -> list[tuple[str, str]]:
    """Pairs of workbench modules that import each other, directly or through others (lazy imports
    inside functions count: they are cycles a reader must hold in mind too)."""
    found = []
    for a in sorted(graph.modules):
        for b in graph.find_modules_directly_imported_by(a):
            if b.startswith("workbench") and graph.find_shortest_chain(importer=b, imported=a):
                found.append(tuple(sorted((a, b))))
    return sorted(set(found))


def test_no_import_cycles_between_modules():
    import grimp

    graph = grimp.build_graph("workbench", cache_dir=None)
    assert _module_cycles(graph) == []
    graph.add_import(importer="workbench.tui.format", imported="workbench.tui.screens.diff")
    assert _module_cycles(graph)  # the check can see one


def test_no_runtime_downloads_in_the_package():
    pattern = re.compile(r"huggingface\.co|hf_hub_download|INSTALL\s+(vss|fts)|tiktoken\.get_encoding")
    offenders = [str(p) for p in (ROOT / "workbench").rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []


def test_readme_names_only_real_commands():
    from workbench.cli.main import cli

    commands = set(cli.commands)
    readme = (ROOT / "README.md").read_text()
    first_block = readme.split("```")[1].splitlines()[1:]
    assert [line.split()[:2] for line in first_block] == [["make", "demo"], ["make", "test"]]
    named = set(re.findall(r"^\s*workbench ([a-z][a-z-]+)", readme, flags=re.M))
    named |= set(re.findall(r"^\| `([a-z][a-z-]+)[ `]", readme, flags=re.M))
    assert named, "README names no commands"
    unknown = named - commands
    assert not unknown, f"README names commands that do not exist: {unknown}"
    undocumented = commands - named - {"restore"}
    assert not undocumented, f"commands missing from the README: {undocumented}"


def test_modules_stay_small():
    big = {str(p.relative_to(ROOT)): n for p in (ROOT / "workbench").rglob("*.py")
           if (n := len(p.read_text().splitlines())) > 500}
    assert big == {}


def test_no_unused_imports_or_undefined_names():
    ruff = Path(sys.executable).parent / "ruff"
    r = subprocess.run([str(ruff), "check", "--select", "F,E9", "workbench", "tests"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_faces_never_decide_who_may_see_or_write():
    """Authorization is the core's (workbench/policy.py through the service): no face applies the
    visibility rule, the policy, or the kinds' table (a principal's kind or write grants) itself."""
    faces = [*(ROOT / "workbench" / "cli").rglob("*.py"), *(ROOT / "workbench" / "tui").rglob("*.py"),
             *(ROOT / "workbench" / "server").rglob("*.py"),
             ROOT / "workbench" / "mcp" / "server.py", ROOT / "workbench" / "mcp" / "shapes.py"]
    pattern = re.compile(r"\.can_see\(|\bpolicy\.(may|require|sees|offered)|from \.+policy import|import policy"
                         r"|\.kind\s*[=!]=\s*[\"'](person|agent|service)[\"']|\.writes\b|KIND_RULES")
    offenders = [str(p.relative_to(ROOT)) for p in faces if pattern.search(p.read_text())]
    assert offenders == []


def test_every_write_in_the_service_goes_through_the_policy():
    """Each service module that appends versions also asks the policy (a new write path cannot forget it)."""
    writers = [p for p in (ROOT / "workbench" / "service").glob("*.py")
               if re.search(r"append_version|write_versions|import_history|put_pin|put_member|put_snooze", p.read_text())]
    assert writers, "no service module writes?"
    for p in writers:
        assert re.search(r"\bpolicy\.|\b_write\(|authorizer\(", p.read_text()), f"{p.name} writes without the policy"


def test_only_the_index_manager_writes_derived_data():
    """Vectors, PageRank, the FTS index, SimHashes and the index snapshot are written in one place
    (retrieval/manager.py): no read path elsewhere quietly writes derived data."""
    writes = re.compile(r"\.(put_embeddings|put_authority|touch_authority|build_fts|put_simhashes)\(|snapshot\.save\(")
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "workbench").rglob("*.py")
                 if "store" not in p.relative_to(ROOT / "workbench").parts[:1]
                 and p.name != "manager.py" and writes.search(p.read_text())]
    assert offenders == []
    assert writes.search((ROOT / "workbench" / "retrieval" / "manager.py").read_text())


def test_no_module_level_mutable_caches_in_retrieval():
    """The search index's state lives in the IndexManager, not in module globals (a dict or list
    assigned at module level and filled later)."""
    pattern = re.compile(r"^_[A-Z_]+(: [^=]+)? = (\{\}|\[\]|dict\(\)|OrderedDict\(\))", re.M)
    offenders = {p.name: pattern.findall(p.read_text()) for p in (ROOT / "workbench" / "retrieval").glob("*.py")}
    assert {name: found for name, found in offenders.items() if found} == {}
