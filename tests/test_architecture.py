"""The architecture stays true: import contracts, offline-only code, documented commands."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def test_import_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    r = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "broken" not in r.stdout.lower() or " 0 broken" in r.stdout.lower()


def test_no_runtime_downloads_in_the_package():
    pattern = re.compile(r"huggingface\.co|hf_hub_download|INSTALL\s+(vss|fts)|tiktoken\.get_encoding")
    offenders = [str(p) for p in (ROOT / "workbench").rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []


def test_readme_names_only_real_commands():
    from workbench.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    readme = (ROOT / "README.md").read_text()
    first_block = readme.split("```")[1].splitlines()[1:]
    assert [line.split()[:2] for line in first_block] == [["make", "demo"], ["make", "test"]]
    named = set(re.findall(r"^\s*workbench ([a-z][a-z-]+)", readme, flags=re.M))
    named |= set(re.findall(r"^\| `([a-z][a-z-]+)[ `]", readme, flags=re.M))
    assert named, "README names no commands"
    unknown = named - set(sub.choices)
    assert not unknown, f"README names commands that do not exist: {unknown}"
    undocumented = set(sub.choices) - named - {"restore"}
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
    visibility rule or the policy itself."""
    faces = [*(ROOT / "workbench" / "cli").rglob("*.py"), *(ROOT / "workbench" / "tui").rglob("*.py"),
             ROOT / "workbench" / "mcp" / "server.py", ROOT / "workbench" / "mcp" / "shapes.py"]
    pattern = re.compile(r"\.can_see\(|\bpolicy\.(may|require|sees)|from \.+policy import|import policy")
    offenders = [str(p.relative_to(ROOT)) for p in faces if pattern.search(p.read_text())]
    assert offenders == []


def test_every_write_in_the_service_goes_through_the_policy():
    """Each service module that appends versions also asks the policy (a new write path cannot forget it)."""
    writers = [p for p in (ROOT / "workbench" / "service").glob("*.py")
               if re.search(r"append_version|write_versions|import_history|put_pin|put_member|put_snooze", p.read_text())]
    assert writers, "no service module writes?"
    for p in writers:
        assert re.search(r"\bpolicy\.|\b_write\(|authorizer\(", p.read_text()), f"{p.name} writes without the policy"
