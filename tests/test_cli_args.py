"""Argument handling of the click CLI: --workspace before or after the command, options taking
several values (space-separated and repeated), one-line usage errors (exit 2), shell completion,
tables that fit a terminal and are never truncated when piped, help text and an example on every
command, and the benchmark loaded from benchmarks/bench.py."""

from __future__ import annotations

import ast
import io
import json
import re
import sys
from pathlib import Path

import click
import pytest

from conftest import CONFIG, ROOT, run_cli, write_fragment
from workbench.cli.main import cli as root

LONG_TITLE = "A title long enough to be cut by a table that truncates: " + " ".join(f"word{i:02d}" for i in range(20))
assert len(LONG_TITLE) < 200  # the schema's limit


@pytest.fixture
def ws(tmp_path):
    root_dir = tmp_path / "ws"
    assert run_cli("init", "--config", str(CONFIG), workspace=root_dir).returncode == 0
    write_fragment(tmp_path / "in", "nw-a", kind="decision", title=LONG_TITLE)
    write_fragment(tmp_path / "in", "nw-b", title="[bold]markup[/bold] :smile: stays literal")
    r = run_cli("ingest", str(tmp_path / "in"), "--as", "marco.bianchi", workspace=root_dir)
    assert r.returncode == 0, r.stderr
    return root_dir


def walk(group: click.Group = root, path: str = "workbench"):
    for name, command in group.commands.items():
        yield f"{path} {name}", command
        if isinstance(command, click.Group):
            yield from walk(command, f"{path} {name}")


def params(*argv: str) -> dict:
    """What the command named by argv[0] (and argv[1] for a group) parses the rest into."""
    command, rest = root.commands[argv[0]], list(argv[1:])
    if isinstance(command, click.Group):
        command, rest = command.commands[rest[0]], rest[1:]
    return command.make_context(command.name, rest, parent=click.Context(root, info_name="workbench"),
                                resilient_parsing=True).params


def one_line_usage_error(r, *needles: str) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr + r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("workbench: error: "), r.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# -- --workspace before and after the command ----------------------------------------------------------------


def test_workspace_is_accepted_before_and_after_the_command(ws, tmp_path):
    before = run_cli("--workspace", str(ws), "list", "--json", "--as", "marco.bianchi")
    after = run_cli("list", "--json", "--as", "marco.bianchi", "--workspace", str(ws))
    assert before.returncode == after.returncode == 0, before.stderr + after.stderr
    assert [f["id"] for f in json.loads(before.stdout)] == [f["id"] for f in json.loads(after.stdout)] \
        == ["nw-a", "nw-b"]
    # given twice, the one after the command wins; in a group's subcommand too
    nowhere = tmp_path / "nowhere"
    r = run_cli("--workspace", str(nowhere), "info", "--json", "--workspace", str(ws))
    assert r.returncode == 0 and json.loads(r.stdout)["workspace"] == str(ws.resolve()), r.stderr
    r = run_cli("--workspace", str(ws), "info", "--workspace", str(nowhere))
    assert r.returncode == 2 and r.stderr.startswith(f"workbench: no workspace at {nowhere}"), r.stderr
    r = run_cli("set", "create", "s", "--scope", "org=northwind", "--as", "marco.bianchi", "--json",
                "--workspace", str(ws))
    assert r.returncode == 0 and json.loads(r.stdout)["name"] == "s", r.stderr
    r = run_cli("set", "show", "s", "--json", "--workspace", str(ws), env={"WORKBENCH_HOME": str(nowhere)})
    assert r.returncode == 0 and json.loads(r.stdout)["owner"] == "marco.bianchi", r.stderr


def test_workspace_defaults_to_workbench_home(ws):
    r = run_cli("info", "--json", env={"WORKBENCH_HOME": str(ws)})
    assert r.returncode == 0 and json.loads(r.stdout)["fragments"] == 2, r.stderr


# -- several values: space-separated, repeated, or both ----------------------------------------------------------


@pytest.mark.parametrize("argv,name,expected", [
    (["eval", "--golden", "g", "--pipeline", "bm25", "dense", "hybrid"], "pipeline", ("bm25", "dense", "hybrid")),
    (["eval", "--golden", "g", "--pipeline", "bm25", "--pipeline", "dense"], "pipeline", ("bm25", "dense")),
    (["eval", "--pipeline", "bm25", "fts", "--golden", "g", "--pipeline", "dense"], "pipeline",
     ("bm25", "fts", "dense")),
    (["eval", "--golden", "g"], "pipeline", ()),
    (["ingest", "--git", "r", "--include", "docs/*.md", "*.py", "--include", "src/*.go"], "include",
     ("docs/*.md", "*.py", "src/*.go")),
    (["antipattern", "add", "--evidence", "INC-1", "INC-2", "--evidence", "nw-x", "--title", "t"], "evidence",
     ("INC-1", "INC-2", "nw-x")),
    (["antipattern", "add", "--tags", "a", "--tags", "b", "c", "--title", "t"], "tags", ("a", "b", "c")),
    (["search", "q", "--kind", "runbook", "--kind", "decision"], "kind", ("runbook", "decision")),
])
def test_multi_value_options_take_space_separated_and_repeated_values(argv, name, expected):
    parsed = params(*[a for a in argv])
    assert parsed[name] == expected


def test_space_separated_values_stop_at_the_next_option():
    parsed = params("eval", "--golden", "g", "--pipeline", "bm25", "dense", "--json", "--compare", "bm25", "dense")
    assert parsed["pipeline"] == ("bm25", "dense") and parsed["as_json"] is True
    assert parsed["compare"] == ("bm25", "dense")
    parsed = params("ingest", "a.md", "--include", "x", "--as", "kb.sync")
    assert parsed["include"] == ("x",) and parsed["principal"] == "kb.sync" and parsed["paths"] == ("a.md",)


def test_multi_value_option_needs_a_value():
    one_line_usage_error(run_cli("eval", "--golden", "g", "--pipeline"), "--pipeline", "requires an argument")


def test_repeated_and_space_separated_values_reach_the_core(ws, sample_workspace):
    r = run_cli("antipattern", "add", "--title", "Retry without a key", "--dont", "d", "--why", "w", "--instead", "i",
                "--scope", "org=northwind", "--as", "marco.bianchi", "--tags", "payments", "retries",
                "--tags", "idempotency", "--evidence", "INC-1", "--evidence", "INC-2", "INC-3", "--json",
                workspace=ws)
    assert r.returncode == 0, r.stderr
    made = json.loads(r.stdout)
    assert made["tags"] == ["payments", "retries", "idempotency"]
    assert made["details"]["evidence"] == ["INC-1", "INC-2", "INC-3"]
    r = run_cli("eval", "--golden", str(ROOT / "sample_corpus" / "golden.yaml"), "--pipeline", "bm25",
                "--pipeline", "fts", "--json", workspace=sample_workspace)
    assert r.returncode == 0, r.stderr
    assert set(json.loads(r.stdout)) == {"bm25", "fts", "paths", "archived"}  # each pipeline asked for; path and archived entries apart


# -- usage errors: exit 2, one line, no traceback ----------------------------------------------------------------


@pytest.mark.parametrize("argv,needles", [
    (["show"], ["missing argument 'ID'", "workbench show --help"]),
    (["list", "--bogus"], ["no such option", "--bogus"]),
    (["show", "x", "--version", "two"], ["--version", "invalid int value: 'two'"]),
    (["search", "q", "--dense-weight", "x"], ["--dense-weight", "invalid float value: 'x'"]),
    (["frobnicate"], ["no such command 'frobnicate'"]),
    (["edit", "x", "--file", "f", "--reason", "r"], ["missing option '--as'"]),
    (["eval"], ["one of the arguments --golden --beir is required"]),
    (["eval", "--golden", "g", "--beir", "b"], ["not allowed with argument --golden"]),
    (["antipattern"], ["missing command", "workbench antipattern --help"]),
    (["set", "show"], ["missing argument 'NAME'", "workbench set show --help"]),
    (["diff", "x", "1"], ["missing argument 'B'"]),
    (["completion", "tcsh"], ["'tcsh' is not one of", "bash"]),
])
def test_usage_errors_are_one_line_and_exit_2(tmp_path, argv, needles):
    one_line_usage_error(run_cli(*argv, workspace=tmp_path / "ws"), *needles)


def test_user_errors_from_the_core_keep_their_one_line(tmp_path):
    r = run_cli("list", workspace=tmp_path / "nowhere")
    assert r.returncode == 2 and r.stderr.startswith("workbench: no workspace at") and r.stderr.count("\n") == 1


def test_a_bug_is_one_line_and_exit_1(ws, monkeypatch):
    import workbench.cli.commands as commands

    def broken():
        raise RuntimeError("boom")

    monkeypatch.setattr(commands, "open_workbench", broken)
    r = run_cli("info", workspace=ws)
    assert r.returncode == 1 and r.stderr == (
        "workbench: internal error: RuntimeError: boom (set WORKBENCH_DEBUG=1 for details)\n")
    r = run_cli("show", "nw-a", "--version", "1", "--reason", "x", workspace=ws)  # usage is checked first
    assert r.returncode == 2 and "no such option '--reason'" in r.stderr


def test_core_errors_name_the_option_that_sets_their_parameter(ws):
    r = run_cli("snooze", "nw-a", "--days", "0", "--as", "marco.bianchi", workspace=ws)
    assert r.returncode == 2 and r.stderr.rstrip().endswith("(--days INT)"), r.stderr
    r = run_cli("pin", "nw-a", "--scope", "org=northwind,repo=payments-api", "--as", "marco.bianchi",
                "--until", "someday", workspace=ws)
    assert r.returncode == 2 and "expiry date" in r.stderr and "(--until DATE)" in r.stderr, r.stderr
    from workbench.cli.options import option_hint

    assert option_hint(root.commands["nudge"], "cooldown_days") == " (--cooldown INT)"
    assert option_hint(root.commands["edit"], "reason", "needs --reason") == ""  # already named
    assert option_hint(root.commands["info"], "reason") == ""


def test_bare_workbench_prints_help_when_not_on_a_terminal():
    r = run_cli()
    assert r.returncode == 0 and "Commands:" in r.stdout and r.stderr == ""
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == "workbench 0.1.0"


# -- shell completion --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shell,needles", [
    ("bash", ["_WORKBENCH_COMPLETE=bash_complete", "complete -o nosort -F", "workbench"]),
    ("zsh", ["#compdef workbench", "_WORKBENCH_COMPLETE=zsh_complete"]),
    ("fish", ["complete --no-files --command workbench", "_WORKBENCH_COMPLETE=fish_complete"]),
])
def test_completion_prints_the_script_for_each_shell(shell, needles):
    r = run_cli("completion", shell)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    for needle in needles:
        assert needle in r.stdout, (shell, needle)


def complete(args: list[str], incomplete: str) -> list[str]:
    from click.shell_completion import BashComplete

    return [c.value for c in BashComplete(root, {}, "workbench", "_WORKBENCH_COMPLETE").get_completions(args,
                                                                                                        incomplete)]


def test_completion_knows_commands_options_and_values(ws):
    assert complete([], "ex") == ["export-files", "export"]
    assert complete(["antipattern"], "") == ["add", "edit"]
    assert "--workspace" in complete(["search", "q"], "--w")
    assert complete(["export"], "cl") == ["claude-md"]
    assert complete(["eval", "--pipeline"], "hybrid-") == ["hybrid-rrf", "hybrid-nopriors", "hybrid-passages", "hybrid-zscore", "hybrid-prf"]
    assert complete(["--workspace", str(ws), "list", "--as"], "marco") == ["marco.bianchi"]
    assert complete(["list", "--workspace", str(ws), "--as"], "lena") == ["lena.fischer"]
    assert complete(["completion"], "") == ["bash", "zsh", "fish"]


def test_completion_offers_the_fragment_ids_and_scopes_the_caller_may_see(ws, tmp_path):
    """Issue 28: completion knew commands and principals, not fragment ids or scopes."""
    write_fragment(tmp_path / "tw", "tw-secret-plan", org="tidewater", repo="dispatch", owner="lena.fischer")
    assert run_cli("ingest", str(tmp_path / "tw"), "--as", "lena.fischer", workspace=ws).returncode == 0
    at = ["--workspace", str(ws)]
    assert complete([*at, "show", "--as", "marco.bianchi"], "nw-") == ["nw-a", "nw-b"]
    assert complete([*at, "show", "--as", "marco.bianchi"], "") == ["nw-a", "nw-b"]   # never tw-secret-plan
    assert complete([*at, "history", "--as", "lena.fischer"], "") == ["tw-secret-plan"]
    assert complete([*at, "merge", "--as", "marco.bianchi", "nw-a"], "nw-") == ["nw-a", "nw-b"]
    assert complete([*at, "show", "--as", "nobody.known"], "") == []   # no principal, nothing: never a leak
    scopes = complete([*at, "list", "--as", "marco.bianchi", "--scope"], "org=")
    assert "org=northwind" in scopes and "org=northwind,repo=payments-api" in scopes
    assert not any(s.startswith("org=tidewater") for s in scopes)
    assert complete([*at, "search", "x", "--as", "lena.fischer", "--scope"], "org=tidewater,r") == [
        "org=tidewater,repo=dispatch", "org=tidewater,repo=fleet-app", "org=tidewater,repo=routing-engine"]


# -- tables: fit the terminal, whole when piped ------------------------------------------------------------------


def test_tables_are_never_truncated_when_piped(ws):
    r = run_cli("list", "--as", "marco.bianchi", workspace=ws)
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if line.startswith("nw-a "))
    assert LONG_TITLE in row and "…" not in r.stdout  # the whole title on the row's one line
    assert "[bold]markup[/bold] :smile: stays literal" in r.stdout
    header, rule = r.stdout.splitlines()[:2]
    assert header.split() == ["id", "kind", "title", "owner", "scope", "age"] and set(rule) == {"-", " "}


def test_tables_fit_the_width_they_are_given():
    from workbench.cli.render import table

    headers = ["id", "kind", "title", "owner", "scope", "age"]
    rows = [["nw-adr-0002-amounts-as-integer-minor-units", "decision", LONG_TITLE, "marco.bianchi",
             "org=northwind,repo=payments-api", "20mo"], ["nw-a", "note", "Short", "x", "org=northwind", "1d"]]
    wide = table(headers, rows, width=400)
    assert LONG_TITLE in wide and max(map(len, wide.splitlines())) > 200
    cells = "".join("".join(cell.split()) for row in rows for cell in row)
    for width in (40, 60, 80, 120):
        text = table(headers, rows, width=width)
        lines = text.splitlines()
        assert max(map(len, lines)) <= width and len(lines) > 4, text
        kept = "".join("".join(line.split()) for i, line in enumerate(lines) if i != 1)  # all but the rule
        assert sorted(kept) == sorted("".join(headers) + cells), text  # long cells wrap: nothing is cut


def test_tables_follow_the_terminal_width(monkeypatch):
    from workbench.cli.render import table

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    rows = [["nw-a", "decision", LONG_TITLE]]
    for columns in (50, 100):
        monkeypatch.setenv("COLUMNS", str(columns))
        monkeypatch.setattr(sys, "stdout", Terminal())
        text = table(["id", "kind", "title"], rows)
        plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
        assert max(map(len, plain.splitlines())) <= columns and "word19" in plain
        assert "\x1b[1m" in text  # on a terminal the header is bold


# -- every command has help text and an example ------------------------------------------------------------------


def test_every_command_has_help_text_and_an_example():
    commands = list(walk())
    assert len(commands) >= 38
    for name, command in commands:
        assert command.help and command.help.strip(), f"{name} has no help text"
        assert "workbench " in getattr(command, "example", ""), f"{name} has no example"
        r = run_cli(*name.split()[1:], "--help")
        assert r.returncode == 0, (name, r.stderr)
        assert "Example:" in r.stdout and command.example.splitlines()[0] in r.stdout, name
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, f"{name} {param.opts} has no help text"
    with pytest.raises(TypeError, match="needs help text and an example"):
        from workbench.cli.options import command

        command("undocumented", "Help.", "")(lambda: None)


def test_command_modules_never_import_main():
    """main.py gathers the commands; a command module importing it back would make a cycle."""
    for path in (ROOT / "workbench" / "cli").glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level
                     and not node.module for a in node.names}
        assert not {"main", "workbench.cli.main"} & imported or path.name == "main.py", path.name


# -- bench: the benchmark is loaded from benchmarks/bench.py --------------------------------------------------


def test_bench_needs_benchmarks_bench_py(tmp_path):
    r = run_cli("bench", "--fragments", "20", env={"WORKBENCH_BENCHMARKS": str(tmp_path)})
    assert r.returncode == 2 and r.stderr.strip() == (
        "workbench: workbench bench runs from a source checkout: benchmarks/bench.py not found "
        "(set WORKBENCH_BENCHMARKS)")


def test_bench_runs_the_file_it_finds(tmp_path):
    (tmp_path / "bench.py").write_text(
        "def run(n, *, queries=100, workdir=None, progress=None, keep=False):\n"
        "    progress(f'fake run of {n}')\n"
        "    return {'fragments': n, 'queries': queries, 'workdir': str(workdir)}\n")
    r = run_cli("bench", "--fragments", "20", "--queries", "3", "--keep", str(tmp_path / "w"), "--json",
                env={"WORKBENCH_BENCHMARKS": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"fragments": 20, "queries": 3, "workdir": str(tmp_path / "w")}
    assert "bench: fake run of 20" in r.stderr


def test_bench_looks_in_the_repository_by_default(monkeypatch):
    from workbench.cli.bench_command import bench_path

    monkeypatch.delenv("WORKBENCH_BENCHMARKS", raising=False)
    assert bench_path() == ROOT / "benchmarks" / "bench.py"


# -- the in-process runner behaves like a process ----------------------------------------------------------------


def test_in_process_runner_feeds_stdin_and_keeps_streams_apart(ws):
    r = run_cli("edit", "nw-b", "--file", "-", "--reason", "from stdin", "--as", "marco.bianchi", "--json",
                workspace=ws, input="Body from standard input.\n")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["body"] == "Body from standard input." and r.stderr == ""
    r = run_cli("show", "nw-b", "--as", "nobody.at.all", workspace=ws)
    assert r.stdout == "" and "unknown principal" in r.stderr


def test_in_process_runner_applies_env_for_the_call_only(ws, monkeypatch):
    monkeypatch.delenv("WORKBENCH_PRINCIPAL", raising=False)
    r = run_cli("list", "--json", workspace=ws, env={"WORKBENCH_PRINCIPAL": "raj.patel"})
    assert r.returncode == 0 and json.loads(r.stdout) == []  # raj sees no northwind fragment
    import os

    assert "WORKBENCH_PRINCIPAL" not in os.environ
    assert json.loads(run_cli("list", "--json", "--as", "marco.bianchi", workspace=ws).stdout)


def test_in_process_calls_leave_the_workspace_closed(ws):
    """A process may open the workspace for writing right after an in-process call returned."""
    assert run_cli("list", workspace=ws).returncode == 0
    r = run_cli("archive", "nw-b", "--reason", "r", "--as", "marco.bianchi", workspace=ws, real=True,
                env={"WORKBENCH_LOCK_TIMEOUT": "0"})
    assert r.returncode == 0, r.stderr


def test_paths_given_to_commands_are_kept_as_given(ws, tmp_path):
    out = tmp_path / "files"
    r = run_cli("export-files", str(out), "--as", "marco.bianchi", "--json", workspace=ws)
    assert r.returncode == 0 and json.loads(r.stdout) == {"dir": str(out.resolve()), "files": 2}, r.stderr
    assert sorted(p.name for p in Path(out).rglob("*.md")) == ["nw-a.md", "nw-b.md"]
