"""The package as users install it: a wheel built offline, installed into a fresh environment.

An editable install hides packaging mistakes (the checkout is right there), so these tests build
the wheel from a copy of the sources, install it into a new venv that has no editable workbench,
and run the installed ``workbench`` from an empty folder: init, ingest, search, schema validation.
The fresh venv borrows the dependencies of .venv through a .pth line; a directory added that way
has its own .pth files ignored, so .venv's editable finder for /work/main is not picked up.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLE, fragment_text

DEPS = Path(sysconfig.get_paths()["purelib"])  # .venv's site-packages: the dependencies, no pip needed
SCHEMA_FILES = sorted(p.name for p in (ROOT / "schemas").glob("*.json"))


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "WORKBENCH_HOME", "PYTHONHOME")}
    return {**env, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONNOUSERSITE": "1"}


def _run(cmd: list, *, cwd: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env or _env(), capture_output=True, text=True,
                          timeout=timeout)


def _source_copy(dst: Path) -> Path:
    """What a build needs, copied: building in /work/main would write build/ and egg-info there."""
    dst.mkdir(parents=True)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("workbench", "schemas"):
        shutil.copytree(ROOT / name, dst / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dst / name)
    return dst


def _pip_install(python: Path, wheel: Path, cwd: Path) -> None:
    r = _run([sys.executable, "-m", "pip", "--isolated", "--disable-pip-version-check", "--python", python,
              "install", "--no-deps", "--no-index", wheel], cwd=cwd)
    assert r.returncode == 0, r.stdout + r.stderr


def _fresh_venv(root: Path, wheel: Path | None = None) -> Path:
    """A new venv without pip; ``wheel`` installed first (so pip sees no other workbench), then the
    dependencies of .venv put on its path."""
    r = _run([sys.executable, "-m", "venv", "--without-pip", root], cwd=root.parent)
    assert r.returncode == 0, r.stderr
    python = root / "bin" / "python"
    if wheel is not None:
        _pip_install(python, wheel, root.parent)
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=root.parent).stdout.strip())
    (site / "_workbench_test_deps.pth").write_text(f"{DEPS}\n")
    return root


def _where(python: Path, cwd: Path, env: dict | None = None) -> tuple[Path, Path]:
    """Where ``python`` imports workbench from, and where workbench.schemas finds the schemas."""
    r = _run([python, "-c", "import workbench, workbench.schemas as s; print(workbench.__file__); "
              "print(s.schema_dir())"], cwd=cwd, env=env)
    assert r.returncode == 0, r.stderr
    package, schemas = r.stdout.strip().splitlines()
    return Path(package), Path(schemas)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built offline with .venv's setuptools (no build isolation, no index)."""
    base = tmp_path_factory.mktemp("wheel")
    src = _source_copy(base / "src")
    r = _run([sys.executable, "-m", "pip", "--isolated", "--disable-pip-version-check", "wheel", "--no-deps",
              "--no-build-isolation", "--no-index", "--wheel-dir", base / "dist", src], cwd=base)
    assert r.returncode == 0, r.stdout + r.stderr
    [built] = (base / "dist").glob("workbench-*.whl")
    return built


def test_pyproject_lists_every_package():
    """Packages are listed (the schemas folder is mapped in), so a new one must be added by hand."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {".".join(d.relative_to(ROOT).parts) for d in [ROOT / "workbench", *(ROOT / "workbench").rglob("*")]
               if d.is_dir() and d.name != "__pycache__" and any(f.is_file() for f in d.iterdir())}
    assert set(config["packages"]) == on_disk | {"workbench.schema_files"}
    assert config["package-dir"] == {"workbench.schema_files": "schemas"}


def test_the_wheel_ships_every_source_file_the_schemas_and_py_typed(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "workbench/py.typed" in names
    assert SCHEMA_FILES and {f"workbench/schema_files/{n}" for n in SCHEMA_FILES} <= names
    migrations = (ROOT / "workbench" / "store" / "migrations").glob("*.sql")
    assert {f"workbench/store/migrations/{p.name}" for p in migrations} <= names
    source = {p.relative_to(ROOT).as_posix() for p in (ROOT / "workbench").rglob("*")
              if p.is_file() and "__pycache__" not in p.parts}
    assert source - names == set()  # every module, the TUI's .tcss, the migrations
    assert not [n for n in names if n.startswith(("tests/", "schemas/", "sample_corpus/"))]


def test_the_installed_wheel_works_without_the_checkout(wheel, tmp_path):
    venv = _fresh_venv(tmp_path / "venv", wheel)
    here = tmp_path / "empty"
    here.mkdir()
    package, schemas = _where(venv / "bin" / "python", here)
    assert package.is_relative_to(venv) and schemas.is_relative_to(venv), (package, schemas)
    assert schemas.name == "schema_files"
    workbench = venv / "bin" / "workbench"
    assert str(venv) in workbench.read_text().splitlines()[0]  # the entry point runs the fresh interpreter

    config = shutil.copy(SAMPLE / "workbench.yaml", tmp_path / "workbench.yaml")
    fragments = shutil.copytree(SAMPLE / "fragments", tmp_path / "fragments")
    r = _run([workbench, "init", "--config", config], cwd=here)
    assert r.returncode == 0, r.stderr
    assert (here / ".workbench" / "workbench.duckdb").is_file()
    r = _run([workbench, "ingest", fragments, "--as", "kb.sync", "--json"], cwd=here)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["added"] == len(list(fragments.rglob("*.md"))) and report["errors"] == []

    r = _run([workbench, "search", "customer charged twice when the client retries", "--as", "agent.nw-coder",
              "--json"], cwd=here)
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)["hits"]
    assert "nw-rb-duplicate-charge" in [h["id"] for h in hits[:3]], [h["id"] for h in hits]
    assert {h["scope"]["org"] for h in hits} == {"northwind"}

    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "nw-bad.md").write_text(fragment_text("nw-bad", extra="colour: blue\n"))
    r = _run([workbench, "ingest", bad, "--as", "kb.sync", "--json"], cwd=here)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    [error] = json.loads(r.stdout)["errors"]
    assert "unknown field 'colour'" in error["message"]


def test_an_editable_install_finds_the_schemas_through_the_package(tmp_path):
    """pyproject's package-dir maps schemas/ in an editable install too: importlib.resources finds the
    checkout's folder as workbench.schema_files (no copy)."""
    src = _source_copy(tmp_path / "src")
    dist = tmp_path / "dist"
    r = _run([sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_editable({str(dist)!r})"],
             cwd=src)
    assert r.returncode == 0, r.stdout + r.stderr
    [editable] = dist.glob("workbench-*.whl")
    venv = _fresh_venv(tmp_path / "venv", editable)
    here = tmp_path / "empty"
    here.mkdir()
    r = _run([venv / "bin" / "python", "-c", "from importlib.resources import files; "
              "print(files('workbench.schema_files'))"], cwd=here)
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()) == src / "schemas"
    assert _where(venv / "bin" / "python", here) == (src / "workbench" / "__init__.py", src / "schemas")


def test_a_checkout_run_without_an_install_finds_its_schemas(tmp_path):
    src = _source_copy(tmp_path / "src")
    venv = _fresh_venv(tmp_path / "venv")  # no workbench installed at all: the checkout is on PYTHONPATH
    here = tmp_path / "empty"
    here.mkdir()
    env = {**_env(), "PYTHONPATH": str(src)}
    assert _where(venv / "bin" / "python", here, env) == (src / "workbench" / "__init__.py", src / "schemas")
