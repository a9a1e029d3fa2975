"""A scripted tmux session at 80×24 drives `workbench tui` on a copy of the sample workspace as a user
would: it types into every screen, completes every workflow of README's TUI table (browse and filter,
search and open, edit and save with a reason, pin and unpin, a new anti-pattern, inbox verify and
snooze, accept and reject a proposal, draft a gap, export, help), and checks each result with the CLI
once ``capture-pane`` shows the expected screen.

Every key the script presses is in ``KEYS`` (action → tmux keys), so a change of the key grammar is
one edit of that table. Waits poll the pane for the text expected, with a timeout; nothing waits on
time alone. The session runs on a tmux server of its own (``-L``), killed at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import WORKBENCH_BIN

from workbench import Workbench

TMUX = shutil.which("tmux") or "/usr/bin/tmux"
ME = "marco.bianchi"                  # leads org=northwind,repo=payments-api
AGENT, SCOPE = "agent.nw-coder", "org=northwind,repo=payments-api"
ADR, QUERY = "nw-adr-0007-idempotency-keys", "idempotency keys"   # marco's own, in the scope he leads
GAP_QUESTION = "how much parental leave do engineers get"
BROWSE = "kind (fuzzy)"               # the Browse screen's kind filter, empty

# action → the tmux keys that do it (tmux key names: Enter, Escape, Tab, BTab, Down, C-s, ...).
# The key grammar (README, "Key grammar"): keys that write are ctrl+letter; dialogs confirm on C-s.
KEYS = {
    # screens (plain letters move between screens)
    "browse": ["b"], "search": ["/"], "inbox": ["i"], "pins": ["p"], "gaps": ["g"],
    "new_antipattern": ["n"], "export": ["x"], "help": ["?"], "back": ["Escape"], "quit": ["C-q"],
    # Browse
    "filter_owner": ["f"], "filter_done": ["Escape"], "delete_left": ["BSpace"], "down": ["Down"],
    # Search
    "to_results": ["Down"], "open": ["Enter"],
    # Fragment and the editor
    "edit": ["C-e"], "save": ["C-s"], "save_anyway": ["C-s"],
    # Pins
    "pin_submit": ["Enter"], "to_pins_table": ["BTab"], "unpin": ["C-u"], "unpin_confirm": ["C-s"],
    # the anti-pattern form
    "next_field": ["Tab"], "create": ["C-s"],
    # Inbox
    "verify": ["C-y"], "verify_confirm": ["C-s"], "snooze": ["C-z"], "snooze_confirm": ["C-s"],
    "to_proposals": ["Tab", "Tab"], "accept": ["C-a"], "accept_confirm": ["C-s"],
    "reject": ["C-r"], "reject_confirm": ["Enter"],
    # Gaps
    "draft": ["C-d"], "draft_save": ["C-s"],
    # Export (from the scope field: set, format, folder)
    "to_export_folder": ["Tab", "Tab", "Tab"], "export_write": ["Enter"],
}

pytestmark = [pytest.mark.process, pytest.mark.skipif(not os.path.exists(TMUX), reason="tmux is not installed")]


class Pane:
    """One tmux session on a server of its own, running one command at 80×24."""

    def __init__(self, name: str, command: list[str], env: dict[str, str]):
        self.server = f"wb-{name}-{os.getpid()}"
        self.target = f"{name}:0.0"
        exports = " ".join(f"{k}={_quote(v)}" for k, v in env.items())
        self._tmux("-f", "/dev/null", "new-session", "-d", "-s", name, "-x", "80", "-y", "24",
                   f"env {exports} {' '.join(_quote(c) for c in command)}")
        self._tmux("set-option", "-t", name, "remain-on-exit", "on")

    def _tmux(self, *args: str) -> str:
        return subprocess.run([TMUX, "-L", self.server, *args], check=True, capture_output=True, text=True,
                              timeout=30).stdout

    def press(self, action: str, *, react: str | None = None) -> None:
        """Press ``action``'s keys. ``react``: then wait until the screen shows the key took effect
        (Textual moves focus after the key is read, so text typed at once would land in the old field):
        "any" change, colours included, a change of a "border" line (the focused field's border
        changes colour; a blinking cursor changes only the line it is on), or "focus": the heavy border
        of the focused field moved (a field's border also changes colour when what was typed becomes
        valid, which "border" would take for the move)."""
        for key in KEYS[action]:   # one key at a time: the next one acts where this one left the focus
            before = self._borders(react)
            self._tmux("send-keys", "-t", self.target, key)
            deadline = time.monotonic() + 30
            while react and self._borders(react) == before:
                assert time.monotonic() < deadline, f"nothing changed on {action} ({key}):\n{self.text()}"
                time.sleep(0.1)

    def _borders(self, react: str | None) -> list[str]:
        if react is None:
            return []
        if react == "focus":   # the focused field's heavy top border (app.tcss): where it is, and its label
            return [f"{i}:{line}" for i, line in enumerate(self.text().splitlines()) if "┏" in line][:1]
        lines = self.text(colours=True).splitlines()
        return [line for line in lines if "▔" in line or "▁" in line] if react == "border" else lines

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", self.target, "-l", text)

    def text(self, *, colours: bool = False) -> str:
        return self._tmux("capture-pane", "-p", *(["-e"] if colours else []), "-t", self.target)

    def wait_for(self, *needles: str, gone: tuple[str, ...] = (), timeout: float = 90) -> str:
        """Poll the pane until every needle shows (and none of ``gone``); the pane's text."""
        deadline = time.monotonic() + timeout
        shown = ""
        while time.monotonic() < deadline:
            shown = self.text()
            if all(n in shown for n in needles) and not any(g in shown for g in gone):
                return shown
            time.sleep(0.2)
        raise AssertionError(f"the pane never showed {needles!r} (without {gone!r}); it showed:\n{shown}")

    def dead(self) -> bool:
        return self._tmux("display-message", "-p", "-t", self.target, "#{pane_dead}").strip() == "1"

    def kill(self) -> None:
        subprocess.run([TMUX, "-L", self.server, "kill-server"], capture_output=True, timeout=30, check=False)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def cli(workspace: Path, *args: str):
    """``workbench ARGS --json`` as its own process (it asks the TUI to let the workspace go), parsed."""
    r = subprocess.run([str(WORKBENCH_BIN), "--workspace", str(workspace), *args, "--json"], capture_output=True,
                       text=True, timeout=180, check=False)
    assert r.returncode == 0, (args, r.stderr)
    return json.loads(r.stdout)


def stale_ids(workspace: Path) -> set[str]:
    return {i["id"] for i in cli(workspace, "stale", "--as", ME) if i.get("owner") == ME}


def home(pane: Pane) -> None:
    """Back to Browse from any screen: leave forms and dialogs first (letters do not fire there)."""
    for _ in range(6):   # one esc at a time: escapes sent in a burst read as alt+esc
        if BROWSE in pane.text():
            break
        shown = pane.text()
        pane.press("back")
        deadline = time.monotonic() + 2
        while pane.text() == shown and time.monotonic() < deadline:
            time.sleep(0.1)
    pane.press("browse")
    pane.wait_for(BROWSE)


@pytest.fixture
def workspace(sample_workspace):
    """The sample with two agent proposals to review in marco's scope and one unanswered question of his."""
    with Workbench.open(sample_workspace) as wb:
        wb.propose("Webhook retries", "Five retries, then the dead-letter queue.", scope=SCOPE, principal=AGENT)
        wb.propose("Retry storms", "Back off with jitter when the PSP times out.", scope=SCOPE, principal=AGENT)
        assert wb.context(GAP_QUESTION, principal=ME).abstained
    return sample_workspace


@pytest.mark.slow
@pytest.mark.deep   # 70-100 s: CI runs it (make test-deep); each workflow's quick sibling is a Pilot test
def test_every_workflow_at_80x24_in_tmux(workspace, tmp_path):
    env = {"TERM": "xterm-256color", "PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/root"),
           "TMPDIR": str(tmp_path), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LANG": "C.UTF-8"}
    pane = Pane("tui", [str(WORKBENCH_BIN), "--workspace", str(workspace), "tui", "--as", ME], env)
    try:
        try:
            _workflows(pane, workspace, tmp_path)
        except AssertionError as e:   # say what the screen showed when the CLI disagreed
            raise AssertionError(f"{e}\n-- the pane showed:\n{pane.text()}") from None
        pane.press("quit")
        deadline = time.monotonic() + 30
        while not pane.dead() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pane.dead(), pane.text()
    finally:
        pane.kill()


def _workflows(pane: Pane, ws: Path, tmp_path: Path) -> None:
    pane.wait_for(f"as {ME}", "nw-adr-0001")

    # -- browse + filter: the owner filter leaves sofia's fragments only
    sofia = {f["id"] for f in cli(ws, "list", "--owner", "sofia.okafor", "--as", ME)}
    pane.press("filter_owner", react="border")
    pane.type("sofia")
    pane.wait_for(f"{len(sofia)} fragments", "owner sofia.okafor", gone=("ADR-0007",))  # marco's ADR goes (ids fold into the detail line at 80)
    for _ in "sofia":
        pane.press("delete_left")
    pane.press("filter_done")
    pane.wait_for("ADR-0007")

    # -- search + open
    found = cli(ws, "search", QUERY, "--as", ME, "-k", "20")
    assert found["hits"][0]["id"] == ADR
    avoid = len(found["avoid"])
    pane.press("search")
    pane.wait_for("search as you type")
    pane.type(QUERY)
    pane.wait_for("ADR-0007", f"hits, {avoid} to avoid for “{QUERY}”")
    pane.press("to_results", react="border")
    for _ in range(avoid):   # the anti-patterns to avoid are listed first: down to the first hit
        pane.press("down", react="any")
    pane.press("open")
    pane.wait_for("History", cli(ws, "show", ADR, "--as", ME)["title"][:16])

    # -- edit + save with a reason (the editor asks for one first)
    pane.press("edit")
    pane.wait_for(f"Editing {ADR}")
    pane.type("Keys live 72 hours. ")
    pane.press("save")
    pane.wait_for("reason is required")
    pane.type("tmux harness: key lifetime")
    pane.wait_for("tmux harness: key lifetime")   # on screen before the save (a typist sees it too)
    pane.press("save")
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:  # a save that changes golden answers asks first
        shown = pane.text()
        if "Save anyway" in shown:
            pane.press("save_anyway")
            break
        if "History" in shown and "Reason" not in shown:
            break
        time.sleep(0.2)
    pane.wait_for("History", gone=("Save anyway",))
    history = cli(ws, "history", ADR, "--as", ME)
    assert history[-1]["reason"] == "tmux harness: key lifetime" and len(history) == 2
    assert cli(ws, "show", ADR, "--as", ME)["body"].startswith("Keys live 72 hours. ")
    home(pane)

    # -- pin, then unpin (it asks)
    pane.press("pins")
    pane.wait_for("Pins:")
    pane.type(ADR)
    pane.press("pin_submit")
    pane.wait_for(ADR[:20], gone=("No pins in force",))
    assert [p["id"] for p in cli(ws, "pins", "--as", ME)] == [ADR]
    pane.press("to_pins_table", react="border")
    pane.press("unpin")
    pane.wait_for("Unpin?")   # the question itself (the footer says "Unpin" too)
    pane.press("unpin_confirm")
    pane.wait_for("No pins in force")
    assert cli(ws, "pins", "--as", ME) == []
    home(pane)

    # -- a new anti-pattern
    pane.press("new_antipattern")
    pane.wait_for("New anti-pattern")
    for value in ("Polling the PSP in a loop", "poll the PSP status endpoint in a tight loop",
                  "it rate-limits us for every merchant (INC-3001)", "wait for the status webhook",
                  "INC-3001"):
        pane.type(value)
        pane.wait_for(value)
        pane.press("next_field", react="focus")
    pane.press("create")
    pane.wait_for("nw-ap-polling", "History")
    created = [f for f in cli(ws, "list", "--kind", "anti-pattern", "--as", ME)
               if f["title"] == "Polling the PSP in a loop"]
    assert len(created) == 1 and created[0]["id"].startswith("nw-ap-polling")
    shown = cli(ws, "show", created[0]["id"], "--as", ME)
    assert "wait for the status webhook" in json.dumps(shown)
    home(pane)

    # -- inbox: verify one stale fragment, snooze the next
    before = stale_ids(ws)
    assert len(before) >= 2
    pane.press("inbox")
    pane.wait_for("Nudge inbox", "to check")
    pane.press("verify")
    pane.wait_for("Verify?")                  # it asks first
    pane.press("verify_confirm")
    pane.wait_for("verified: still true", gone=("Verify?",))
    after_verify = stale_ids(ws)
    assert len(before - after_verify) == 1
    pane.press("snooze")
    pane.wait_for("Keep it off the stale list")   # it asks, with the days
    pane.press("snooze_confirm")
    pane.wait_for("snoozed for", gone=("Keep it off the stale list",))
    after_snooze = stale_ids(ws)
    assert len(after_verify - after_snooze) == 1
    snoozed = (after_verify - after_snooze).pop()
    assert cli(ws, "show", snoozed, "--as", ME)["id"] == snoozed

    # -- proposals: accept the first, reject the other with a reason
    waiting = cli(ws, "proposals", "--as", ME)
    assert len([p for p in waiting if p["status"] == "proposed" and not p.get("mine")]) == 2
    pane.wait_for("awaiting your review")
    pane.press("to_proposals", react="any")
    pane.press("accept")
    pane.wait_for("Accept prop-")
    pane.press("accept_confirm")
    pane.wait_for("1 awaiting your review")   # the table reloaded: the next row is the other proposal
    pane.press("reject")
    pane.wait_for("Reject prop-")
    pane.type("a duplicate of the retry ADR")
    pane.press("reject_confirm")
    pane.wait_for("rejected prop-", gone=("Proposals to review",))
    left = cli(ws, "proposals", "--as", ME, "--status", "all")
    statuses = sorted(p["status"] for p in left if p["proposed_by"] == AGENT)
    assert statuses == ["rejected"], left   # the accepted one is a fragment now
    assert any(f["title"] in ("Webhook retries", "Retry storms") for f in cli(ws, "list", "--owner", ME, "--as", ME))
    home(pane)

    # -- gaps: draft an answer to the unanswered question (a proposal until published)
    pane.press("gaps")
    pane.wait_for("Gaps:", "parental leave")
    pane.press("draft")
    pane.wait_for("Draft an answer")
    pane.press("draft_save")
    pane.wait_for("Gaps:", gone=("Draft an answer",))
    drafts = [p for p in cli(ws, "proposals", "--as", ME) if "parental leave" in p["title"].lower()]
    assert len(drafts) == 1 and drafts[0]["status"] == "proposed", drafts
    home(pane)

    # -- export: AGENTS.md for the scope marco leads, into a folder
    out = tmp_path / "export"
    pane.press("export")
    pane.wait_for("Export:")
    pane.press("to_export_folder", react="border")
    pane.type(str(out))
    pane.press("export_write")
    pane.wait_for("wrote")
    written = (out / "AGENTS.md").read_text(encoding="utf-8")
    expected = cli(ws, "export", "agents-md", "--scope", SCOPE, "--as", ME, "--out", str(tmp_path / "cli-export"))
    assert (tmp_path / "cli-export" / "AGENTS.md").read_text(encoding="utf-8") == written, expected
    home(pane)

    # -- help
    pane.press("help")
    pane.wait_for("workbench keys", "A plain character never changes anything")
    pane.press("back")
    pane.wait_for(BROWSE)
