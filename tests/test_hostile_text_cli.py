"""Text from others is inert in the command line (issue 26, "Others' text attacks your terminal"):
a proposal an agent titled with ``ESC[2J``, an OSC window title, a right-to-left override and
Rich markup, a version's reason, a review's reason, a pin's reason and a gap's question reach
every command's output, text and ``--json``, stdout and stderr, with no character a terminal acts
on; the text is shown visibly (``\\u001b[2J``); ``--json`` stays exact; exports' rendered files
carry none either, and a bundle still round-trips byte for byte in value."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from conftest import CONFIG, examples, run_cli
from hostile_text import AGENT, LEAD, RED_TEAM, SCOPE, TAGGED, hostile_line, hostile_workspace, seed, unsafe
from hypothesis import HealthCheck, given, settings

from workbench import Workbench

SHOWN = "\\u001b[2J\\u001b]0;pwned\\u0007 \\u202eevil [/] [@click=app.quit]x[/]"  # RED_TEAM, made inert


@pytest.fixture(scope="module")
def hostile_ws(sample_workspace_template, tmp_path_factory):
    root = hostile_workspace(sample_workspace_template, tmp_path_factory.mktemp("hostile"))
    with Workbench.open(root) as wb:
        ids = seed(wb)
    return root, ids


def cli(ws, *args, code: int | None = 0):
    r = run_cli(*args, workspace=ws)
    assert unsafe(r.stdout) == [] and unsafe(r.stderr) == [], (args, r.stdout[-2000:], r.stderr[-2000:])
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
    if code is not None:
        assert r.returncode == code, (args, r.returncode, r.stderr)
    return r


def commands(ids: dict[str, str]) -> list[tuple[str, ...]]:
    """Every command that shows what others wrote, as the lead who reviews the agent's proposals."""
    p, rejected, edited = ids["proposal"], ids["rejected"], ids["edited"]
    return [("list", "--as", LEAD), ("list", "--all", "--as", LEAD), ("show", p, "--as", LEAD),
            ("show", rejected, "--as", LEAD), ("show", edited, "--as", LEAD), ("history", edited, "--as", LEAD),
            ("history", rejected, "--as", LEAD), ("diff", edited, "1", "2", "--as", LEAD),
            ("proposals", "--as", LEAD), ("proposals", "--status", "all", "--as", LEAD),
            ("proposals", "--status", "rejected", "--as", AGENT),
            ("search", "retry jitter parental leave", "--as", LEAD), ("context", "retry with jitter", "--as", LEAD),
            ("gaps", "--as", "priya.raman"), ("usage", "--as", LEAD), ("stale", "--days", "1", "--as", LEAD),
            ("pins", "--as", LEAD), ("graph", "--as", LEAD), ("dedupe", "--as", LEAD), ("info",),
            ("principals",)]


def test_every_command_shows_the_red_team_text_inert(hostile_ws):
    ws, ids = hostile_ws
    seen = ""
    for args in commands(ids):
        seen += cli(ws, *args).stdout
    assert SHOWN in seen  # shown, visibly: the reviewer sees what the agent sent
    found = json.loads(cli(ws, "search", f"retry {RED_TEAM}", "--as", LEAD, "--json").stdout)
    assert f"query: retry Retry {SHOWN}" in cli(ws, "trace", found["trace_id"], "--as", LEAD).stdout  # a query, too
    assert json.loads(cli(ws, "trace", found["trace_id"], "--as", LEAD, "--json").stdout)["query"] == f"retry {RED_TEAM}"
    assert "[/] not this Retry \\u001b[2J" in seen and "[/] Retry \\u001b[2J" in seen  # reasons too


def test_json_output_is_inert_and_exact(hostile_ws):
    from workbench.cli.main import cli as root

    ws, ids = hostile_ws
    for args in commands(ids):
        if not any(p.name == "as_json" for p in root.commands[args[0]].params):
            continue
        r = cli(ws, *args, "--json")
        json.loads(r.stdout)
        if args[0] in ("show", "proposals") and "rejected" not in args:
            assert "\\u202e" in r.stdout, args
    shown = json.loads(cli(ws, "show", ids["proposal"], "--as", LEAD, "--json").stdout)
    assert shown["title"] == f"{RED_TEAM} 0"  # the stored value, exactly
    history = json.loads(cli(ws, "history", ids["edited"], "--as", LEAD, "--json").stdout)
    assert history[-1]["reason"] == f"[/] {RED_TEAM}"


def test_errors_that_echo_input_are_inert(hostile_ws):
    ws, _ = hostile_ws
    evil = "\x1b[2J\x9b2J\u202eid[/]"
    for args, code in [(("show", evil, "--as", LEAD), 2), (("history", evil, "--as", LEAD), 2),
                       (("list", "--as", evil), 2), (("search", "x", "--scope", evil, "--as", LEAD), None),
                       (("propose", evil, "--body", "b", "--kind", evil, "--as", AGENT), 2),
                       (("pin", evil, "--scope", SCOPE, "--as", LEAD), 2), ((evil,), 2)]:
        r = cli(ws, *args, code=code)
        assert r.stderr.strip(), args


def test_a_proposal_made_on_the_command_line_prints_inert(hostile_ws):
    ws, _ = hostile_ws
    r = cli(ws, "propose", RED_TEAM, "--body", "b\x1b]0;t\x07", "--scope", SCOPE, "--as", AGENT)
    assert r.stdout.startswith("proposed prop-")
    made = r.stdout.split()[1]
    assert SHOWN in cli(ws, "show", made, "--as", LEAD).stdout
    r = cli(ws, "review", "reject", made, "--reason", "[/] \x1b[2J no", "--as", LEAD)
    assert "\\u001b[2J no" in cli(ws, "show", made, "--as", AGENT).stdout


def test_a_table_on_a_terminal_keeps_its_bold_header_and_nothing_else(monkeypatch):
    from workbench.cli.render import Inert, InertStream, table

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdout", Terminal())
    text = table(["id", "title"], [["nw-a", RED_TEAM], ["\x9b2J", "\u202e[/]"]])
    assert type(text) is Inert and "\x1b[1m" in text
    assert unsafe(text.replace("\x1b[1m", "").replace("\x1b[0m", "")) == []
    out = Terminal()
    print(text, file=InertStream(out))
    print("a title \x1b[1m from others", file=InertStream(out))
    assert out.getvalue().count("\x1b") == text.count("\x1b") and "a title \\u001b[1m from others" in out.getvalue()


def test_a_command_run_in_the_team_server_answers_inert(hostile_ws, monkeypatch):
    from workbench.cli.main import cli as root
    from workbench.cli.remote import CommandApi, route_output

    ws, ids = hostile_ws
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # put back afterwards: routed by request, as in the server
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    route_output()
    with Workbench.open(ws) as wb:
        api = CommandApi(root)
        for argv, columns in [(["proposals"], 100), (["show", ids["proposal"]], None),
                              (["proposals", "--json"], None), (["show", "\x1b[2J"], None)]:
            ran = api.run(argv, principal=LEAD, admin=False, wb=wb, columns=columns)
            assert unsafe(ran.stdout) == [] and unsafe(ran.stderr) == [], (argv, ran)
            assert "\x1b" not in ran.stdout  # no styling either: the caller's terminal is not ours to style
        ran = api.run(["proposals"], principal=LEAD, admin=False, wb=wb, columns=100)
        rows = ran.stdout.split("\n\n")[0]
        assert "\\u001b" in rows and max(map(len, rows.splitlines())) <= 100, ran  # the caller's width


def test_exports_rendered_text_is_inert_and_bundles_round_trip_exactly(hostile_ws, tmp_path):
    ws, ids = hostile_ws
    for fmt in ("agents-md", "claude-md", "cursor-rules", "llms-txt"):
        cli(ws, "export", fmt, "--scope", SCOPE, "--out", str(tmp_path / fmt), "--as", LEAD)
    cli(ws, "export-files", str(tmp_path / "files"), "--as", LEAD)
    rendered = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".md", ".mdc", ".txt")]
    assert len(rendered) > 10
    texts = "".join(p.read_text(encoding="utf-8") for p in rendered)
    assert unsafe(texts) == [] and "\\u001b[2J" in texts
    assert "hidden\\udb40\\udc69\\udb40\\udc67" in texts and "zero\\u200bwidth" in texts  # the invisible, shown
    cli(ws, "set", "create", "hostile", "--scope", SCOPE, "--as", LEAD)
    cli(ws, "export", "bundle", "--set", "hostile", "--out", str(tmp_path / "bundle"), "--as", LEAD)
    assert unsafe((tmp_path / "bundle" / "fragments.jsonl").read_text(encoding="utf-8")) == []
    fresh = tmp_path / "fresh"
    Workbench.init(fresh, config=CONFIG).close()
    cli(fresh, "import-bundle", str(tmp_path / "bundle"), "--as", LEAD)
    with Workbench.open(ws) as a, Workbench.open(fresh) as b:
        before, after = a.get(ids["edited"], principal=LEAD), b.get(ids["edited"], principal=LEAD)
        assert after.body == before.body and RED_TEAM in after.body
        reasons = zip(a.history(ids["edited"], principal=LEAD), b.history(ids["edited"], principal=LEAD), strict=True)
        assert all(old.reason in new.reason for old, new in reasons)  # "import bundle ...: {reason} (by ...)"
        assert "\u2028" in after.body and TAGGED in after.body


def test_nudge_digests_are_inert_and_private(hostile_ws):
    """The digest names the agent's proposal (its title) and the question it asked: inert, as every
    face's output, and readable by the workspace's user only (red team on issue 26)."""
    import stat

    ws, ids = hostile_ws
    report = json.loads(cli(ws, "nudge", "--as", LEAD, "--json").stdout)
    digests = [Path(d) for d in report["digests"]]
    mine = next(d for d in digests if d.name == f"{LEAD}.md").read_text(encoding="utf-8")
    assert ids["proposal"] in mine and "\\u001b[2J\\u001b]0;pwned\\u0007 \\u202eevil" in mine, mine
    for d in digests:
        assert unsafe(d.read_text(encoding="utf-8")) == [], d
        assert stat.S_IMODE(d.stat().st_mode) == 0o600, d
    for folder in (digests[0].parent, digests[0].parent.parent):
        assert folder.name in ("outbox", digests[0].parent.name) and stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert not [p for p in digests[0].parent.iterdir() if p.suffix != ".md"]   # no temporary file left


def check_generated(ws, text: str, every_command: bool) -> None:
    """Seed ``text`` everywhere (a fresh tag each time) and read it back through the commands."""
    check_generated.n = n = getattr(check_generated, "n", 0) + 1
    with Workbench.open(ws) as wb:
        ids = seed(wb, text, tag=f"g{n}")
    shown = commands(ids) if every_command else [
        ("proposals", "--as", LEAD), ("show", ids["proposal"], "--as", LEAD), ("history", ids["edited"], "--as", LEAD),
        ("gaps", "--as", "priya.raman"), ("pins", "--as", LEAD), ("show", ids["rejected"], "--as", AGENT)]
    for args in shown:
        cli(ws, *args)
    data = json.loads(cli(ws, "show", ids["proposal"], "--as", LEAD, "--json").stdout)
    with Workbench.open(ws) as wb:
        assert data["title"] == wb.get(ids["proposal"], principal=LEAD).title  # exact


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=hostile_line())
def test_generated_hostile_text_is_inert_in_the_review_commands(hostile_ws, text):
    check_generated(hostile_ws[0], text, every_command=False)


@pytest.mark.slow
@pytest.mark.deep
@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=hostile_line(10))
def test_generated_hostile_text_is_inert_in_every_command(hostile_ws, text):
    check_generated(hostile_ws[0], text, every_command=True)
