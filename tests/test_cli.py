"""The CLI as users run it: exit codes, one-line errors, JSON contracts (in-process through click's
CliRunner, and the installed entry point as a real subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import CONFIG, fragment_text, write_fragment


@pytest.fixture(params=["local", pytest.param("server", marks=pytest.mark.process)])
def ws(request, tmp_path, cli, backend_config):
    """The workspace the contract tests run on, twice: used by the CLI directly, and held by a
    running `workbench server` (the same commands then go to the server: same output, same exit);
    and each on both store backends (``backend_config``)."""
    root = tmp_path / "ws"
    r = cli("init", "--config", str(backend_config), workspace=root)
    assert r.returncode == 0, r.stderr
    if request.param == "server":
        from server_support import server

        running = request.getfixturevalue("_server_stack").enter_context(server(root))
        assert cli("info", "--json", workspace=root).returncode == 0, running.log.read_text()
    write_fragment(tmp_path / "in", "nw-a", kind="decision", body="## Why\nBecause.")
    write_fragment(tmp_path / "in", "tw-b", org="tidewater", repo="dispatch", owner="raj.patel")
    r = cli("ingest", str(tmp_path / "in"), "--json", "--as", "grace.kim", workspace=root)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"added": 2, "updated": 0, "unchanged": 0, "errors": [], "warnings": []}
    return root


@pytest.fixture
def _server_stack():
    import contextlib

    with contextlib.ExitStack() as stack:
        yield stack


def assert_user_error(r, text):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert text in r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_help_answers_without_importing_torch_or_duckdb():
    code = ("import sys; from workbench.cli.main import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('torch', 'sentence_transformers', 'duckdb', 'networkx', 'textual') "
            "if m in sys.modules]\nprint(heavy)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.strip().splitlines()[-1] == "[]", r.stdout


def test_every_command_has_help():
    import click

    from workbench.cli.main import cli as root

    def walk(group, path):
        for name, command in group.commands.items():
            yield f"{path} {name}", command
            if isinstance(command, click.Group):
                yield from walk(command, f"{path} {name}")

    commands = list(walk(root, "workbench"))
    assert len(commands) > 30, "commands are missing"
    for name, command in commands:
        assert command.help, f"{name} has no help text"
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, f"{name} {param.opts} has no help text"


def test_json_contracts(ws, cli):
    shown = json.loads(cli("show", "nw-a", "--json", "--as", "marco.bianchi", workspace=ws).stdout)
    for key in ("id", "version", "title", "body", "kind", "scope", "owner", "updated_at", "sources", "links"):
        assert key in shown
    assert shown["scope"] == {"org": "northwind", "repo": "payments-api", "persona": None, "session": None}
    people = json.loads(cli("principals", "--json", workspace=ws).stdout)
    assert all(set(p) == {"name", "kind", "orgs", "repos", "personas", "lead_of", "writes"} for p in people)
    marco = next(p for p in people if p["name"] == "marco.bianchi")
    assert marco["lead_of"] == ["org=northwind,repo=payments-api"]
    listed = json.loads(cli("list", "--json", "--as", "grace.kim", workspace=ws).stdout)
    assert [f["id"] for f in listed] == ["nw-a", "tw-b"]
    history = json.loads(cli("history", "nw-a", "--json", "--as", "marco.bianchi", workspace=ws).stdout)
    assert [(v["version"], v["author"]) for v in history] == [(1, "grace.kim")]  # the actor, not the file's owner


def test_list_filters_and_scope(ws, cli):
    def ids(*args):
        r = cli("list", "--json", *args, workspace=ws)
        assert r.returncode == 0, r.stderr
        return [f["id"] for f in json.loads(r.stdout)]

    assert ids("--as", "marco.bianchi") == ["nw-a"]
    assert ids("--as", "raj.patel") == ["tw-b"]
    assert ids("--as", "grace.kim", "--scope", "org=tidewater") == ["tw-b"]
    assert ids("--as", "grace.kim", "--kind", "decision") == ["nw-a"]
    assert ids("--as", "grace.kim", "--owner", "raj.patel") == ["tw-b"]


def test_edit_revert_diff_round(ws, cli, tmp_path):
    body = tmp_path / "body.md"
    body.write_text("## Why\nBecause of retries.\n")
    r = cli("edit", "nw-a", "--file", str(body), "--reason", "more", "--as", "marco.bianchi", workspace=ws)
    assert r.returncode == 0 and "version 2" in r.stdout
    r = cli("diff", "nw-a", "1", "2", "--as", "marco.bianchi", workspace=ws)
    assert "+Because of retries." in r.stdout
    r = cli("revert", "nw-a", "--to", "1", "--as", "marco.bianchi", "--json", workspace=ws)
    assert json.loads(r.stdout)["version"] == 3
    r = cli("show", "nw-a", "--version", "2", "--json", "--as", "marco.bianchi", workspace=ws)
    assert json.loads(r.stdout)["body"] == "## Why\nBecause of retries."


def test_bad_input_exits_2_with_one_line(ws, cli, tmp_path):
    body = tmp_path / "body.md"
    body.write_text("new text\n")
    assert_user_error(cli("show", "nw-nope", workspace=ws), "unknown fragment 'nw-nope'")
    assert_user_error(cli("show", "nw-a", "--as", "mallory", workspace=ws), "unknown principal 'mallory'")
    assert_user_error(cli("edit", "nw-a", "--file", str(body), "--as", "marco.bianchi", workspace=ws),
                      "reason is required")
    assert_user_error(cli("edit", "nw-a", "--file", str(tmp_path / "missing.md"), "--reason", "r",
                          "--as", "marco.bianchi", workspace=ws), "cannot read")
    assert_user_error(cli("list", "--scope", "repo=x", workspace=ws), "org is required")
    assert_user_error(cli("list", "--kind", "essay", workspace=ws), "unknown kind 'essay'")
    assert_user_error(cli("list", workspace=tmp_path / "nowhere"), "no workspace at")
    r = cli("show", workspace=ws)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    # nothing stored was lost
    assert json.loads(cli("info", "--json", workspace=ws).stdout)["versions"] == 2


def test_out_of_scope_id_answers_like_an_unknown_id(ws, cli):
    r = cli("show", "tw-b", "--as", "marco.bianchi", workspace=ws)
    assert_user_error(r, "unknown fragment 'tw-b'")
    assert_user_error(cli("history", "tw-b", "--as", "marco.bianchi", workspace=ws), "unknown fragment")
    assert_user_error(cli("diff", "tw-b", "1", "1", "--as", "marco.bianchi", workspace=ws), "unknown fragment")


def test_ingest_with_a_bad_file_exits_2_but_imports_the_rest(ws, cli, tmp_path):
    src = tmp_path / "more"
    write_fragment(src, "nw-c")
    (src / "bad.md").write_text(fragment_text("nw-d", kind="essay"))
    r = cli("ingest", str(src), "--json", workspace=ws)
    assert r.returncode == 2
    out = json.loads(r.stdout)
    assert out["added"] == 1 and out["errors"][0]["file"].endswith("bad.md")


@pytest.mark.process
def test_workspace_location_precedence(tmp_path, cli):
    env_ws, flag_ws = tmp_path / "env", tmp_path / "flag"
    assert cli("init", env={"WORKBENCH_HOME": str(env_ws)}).returncode == 0
    assert (env_ws / "workbench.yaml").is_file() and (env_ws / "workbench.duckdb").is_file()
    assert cli("init", workspace=flag_ws, env={"WORKBENCH_HOME": str(env_ws)}).returncode == 0
    assert (flag_ws / "workbench.duckdb").is_file()
    cwd = tmp_path / "here"
    cwd.mkdir()
    from conftest import WORKBENCH_BIN
    import os
    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_HOME"}
    r = subprocess.run([str(WORKBENCH_BIN), "init"], cwd=cwd, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert (cwd / ".workbench" / "workbench.duckdb").is_file()


def test_bad_workspace_config_names_file_and_field(tmp_path, cli):
    bad = tmp_path / "workbench.yaml"
    bad.write_text("orgs:\n  - name: acme\nprincipals:\n  - name: a\n    orgs: [nope]\n")
    r = cli("init", "--config", str(bad), workspace=tmp_path / "ws")
    assert_user_error(r, "principals.0.orgs: unknown org 'nope'")
    bad.write_text("orgs: [\n")
    assert_user_error(cli("init", "--config", str(bad), workspace=tmp_path / "ws"), "malformed YAML")


# -- the installed entry point, as a real process --------------------------------------------------


def test_the_installed_entry_point_round_trip(tmp_path, cli_process):
    root = tmp_path / "ws"
    assert cli_process("init", "--config", str(CONFIG), workspace=root).returncode == 0
    write_fragment(tmp_path / "in", "nw-a", kind="decision", body="## Why\nBecause.")
    r = cli_process("ingest", str(tmp_path / "in"), "--json", "--as", "grace.kim", workspace=root)
    assert r.returncode == 0 and json.loads(r.stdout)["added"] == 1, r.stderr
    r = cli_process("--workspace", str(tmp_path / "elsewhere"), "show", "nw-a", "--json", "--workspace", str(root))
    assert r.returncode == 0 and json.loads(r.stdout)["id"] == "nw-a", r.stderr  # after the command, it wins
    r = cli_process("list", "--as", "grace.kim", workspace=root)
    assert r.returncode == 0 and "nw-a" in r.stdout and "Title of nw-a" in r.stdout
    assert_user_error(cli_process("show", "nw-nope", workspace=root), "unknown fragment 'nw-nope'")
    r = cli_process("show", "--bogus", workspace=root)
    assert_user_error(r, "no such option")
    assert r.stderr.startswith("workbench: error: ")


def test_a_closed_pipe_is_not_an_error(tmp_path, cli_process):
    """`workbench list | head -0`: the reader leaves before the output comes; exit 0, nothing on stderr."""
    from conftest import WORKBENCH_BIN

    root = tmp_path / "ws"
    assert cli_process("init", "--config", str(CONFIG), workspace=root).returncode == 0
    proc = subprocess.Popen([str(WORKBENCH_BIN), "--workspace", str(root), "principals"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and err == "", err


def test_python_dash_m_and_version(cli_process):
    r = subprocess.run([sys.executable, "-m", "workbench", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "workbench 0.1.0", r.stderr
    r = cli_process("completion", "bash")
    assert r.returncode == 0 and "_WORKBENCH_COMPLETE=bash_complete" in r.stdout
    r = cli_process("completion", "zsh")
    assert r.returncode == 0 and "compdef" in r.stdout


def test_shell_completion_through_the_entry_point(sample_workspace):
    """What bash runs on TAB: the entry point with click's completion variables."""
    import os

    from conftest import WORKBENCH_BIN

    env = {**os.environ, "_WORKBENCH_COMPLETE": "bash_complete", "COMP_WORDS": "workbench sea", "COMP_CWORD": "1"}
    r = subprocess.run([str(WORKBENCH_BIN)], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "plain,search" in r.stdout.splitlines(), r.stdout + r.stderr
    env.update(COMP_WORDS=f"workbench --workspace {sample_workspace} list --as marco.", COMP_CWORD="5")
    r = subprocess.run([str(WORKBENCH_BIN)], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "plain,marco.bianchi" in r.stdout.splitlines(), r.stdout + r.stderr
