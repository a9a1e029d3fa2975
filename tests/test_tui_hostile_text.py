"""Text from others is inert in the TUI (issue 26, "Others' text attacks your terminal"): with an
agent's proposal titled with ``ESC[2J``, an OSC title, a right-to-left override and Rich markup
(``[/]``, ``[@click=app.quit]x[/]``), a version's reason, a review's reason, a pin's reason and a
gap's question holding ``[/]``, the app starts, every screen shows the text literally (nothing a
terminal acts on reaches the screen), clicking it runs no action, and a markdown link opens only
http(s). Generated hostile text goes through every screen the same way. Pilot."""

from __future__ import annotations

import ast
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import ROOT, examples
from hostile_text import AGENT, SCOPE, hostile_line, hostile_workspace, seed, unsafe
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tui_support import NOW, app_for, settle, until

from workbench import Workbench

SIZE = (160, 48)
REVIEWER = "priya.raman"  # leads all of northwind: reviews the proposals, sees the gaps and the pins
CLICK = "[@click=app.quit]click to quit[/] [@click=app.bell]or ring[/]"  # valid markup: a link if read


@pytest.fixture(scope="module")
def hostile_ws(sample_workspace_template, tmp_path_factory):
    root = hostile_workspace(sample_workspace_template, tmp_path_factory.mktemp("tui-hostile"))
    with Workbench.open(root) as wb:
        ids = seed(wb, now=NOW - timedelta(days=1))
    return root, ids


def screen_text(app) -> str:
    """What the current screen paints, line by line (the cells a terminal would receive)."""
    return "\n".join("".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips())


def name(app) -> str:
    return type(app.screen).__name__


class Visit:
    """Walks the app through its screens, checking each paint: nothing a terminal acts on."""

    def __init__(self, app, pilot) -> None:
        self.app, self.pilot, self.seen = app, pilot, {}

    async def look(self, expect: str) -> str:
        await settle(self.pilot)
        try:
            await until(self.pilot, lambda: name(self.app) == expect, timeout=20)
        except AssertionError:
            raise AssertionError(f"expected {expect}, the app shows {name(self.app)} "
                                 f"({[type(s).__name__ for s in self.app.screen_stack]}, focus {self.app.focused})\n"
                                 + screen_text(self.app)) from None
        await settle(self.pilot)
        text = screen_text(self.app)
        assert unsafe(text) == [], (expect, sorted(set(unsafe(text))))
        self.seen[expect] = self.seen.get(expect, "") + text
        return text

    async def key(self, *keys: str) -> None:
        await self.pilot.press(*keys)

    async def every_screen(self, ids: dict[str, str]) -> None:
        app = self.app
        await self.look("BrowseScreen")
        await self.key("slash")
        await self.look("SearchScreen")
        await self.key(*"retry jitter")
        await self.look("SearchScreen")
        await self.key("escape")
        await self.key("i")
        await until(self.pilot, lambda: name(app) == "InboxScreen" and len(getattr(app.screen, "proposals", [])) > 0)
        await self.look("InboxScreen")
        app.screen.query_one("#proposals").focus()
        await self.look("InboxScreen")
        await self.key("ctrl+a")
        await self.look("AcceptDialog")
        await self.key("escape")
        await self.look("InboxScreen")
        await self.key("enter")
        await until(self.pilot, lambda: name(app) == "FragmentScreen" and app.screen.fragment is not None)
        await self.look("FragmentScreen")
        await self.key("escape")
        await self.look("InboxScreen")
        app.open_fragment(ids["edited"])
        await until(self.pilot, lambda: name(app) == "FragmentScreen" and app.screen.fragment is not None)
        await self.look("FragmentScreen")
        await self.key("d")
        await self.look("DiffScreen")
        await self.key("escape")
        await self.look("FragmentScreen")
        await self.key("ctrl+e")
        await until(self.pilot, lambda: name(app) == "EditScreen" and app.screen.ready)
        await self.look("EditScreen")
        await self.key("escape")
        await self.look("FragmentScreen")
        app.screen.query_one("#history").focus()
        await self.key("up", "ctrl+r")
        await self.look("RevertScreen")
        await self.key("escape")
        await self.look("FragmentScreen")
        app.open_fragment(ids["rejected"])
        await until(self.pilot, lambda: name(app) == "FragmentScreen" and app.screen.fragment is not None)
        await self.look("FragmentScreen")
        await self.key("escape", "escape", "escape")
        await self.key("p")
        await self.look("PinsScreen")
        await self.key("escape")
        await self.key("g")
        await self.look("GapsScreen")
        await self.key("ctrl+d")
        await self.look("NewFragmentScreen")
        await self.key("escape")
        if name(app) != "GapsScreen":  # asked whether to discard the draft
            await self.key("y")
        await self.look("GapsScreen")
        await self.key("escape")
        await self.key("x")
        await self.look("ExportScreen")
        await self.key("ctrl+r")
        await self.look("ExportScreen")
        await self.key("escape")
        await self.key("question_mark")
        await self.look("HelpScreen")
        await self.key("escape")
        assert app.is_running and app.return_code is None


async def test_the_red_team_text_is_shown_literally_on_every_screen(hostile_ws):
    ws, ids = hostile_ws
    with Workbench.open(ws) as wb:
        app = app_for(wb, principal=REVIEWER)
        async with app.run_test(size=SIZE) as pilot:
            visit = Visit(app, pilot)
            await visit.every_screen(ids)
            seen = visit.seen
    flat = {k: " ".join(v.split()) for k, v in seen.items()}
    assert "\\u001b[2J\\u001b]0;pwned\\u0007" in flat["InboxScreen"]   # the proposal's title, visibly
    assert "[@click=app.quit]x[/]" in flat["InboxScreen"]               # markup shown, not read
    assert "[/] Retry \\u001b" in flat["FragmentScreen"]                 # a version's reason
    assert "rejected: [/] not" in flat["FragmentScreen"]                  # a review's reason
    assert "[@click=app.quit]quit[/]" in flat["DiffScreen"] and "· [/] Retry \\u001b[2J" in flat["DiffScreen"]
    assert "[/] Retry" in flat["PinsScreen"]                              # a pin's reason
    assert "parental leave [/] \\u001b[\\u001b];\\u0007 \\u202e" in flat["GapsScreen"]  # a question


async def test_clicking_the_markup_runs_no_action_and_a_markdown_link_opens_nothing_local(hostile_ws):
    ws, _ = hostile_ws
    with Workbench.open(ws) as wb:
        made = wb.propose(CLICK, "[another](file:///etc/passwd) [ok](https://example.com/ok)", scope=SCOPE,
                          principal=AGENT).id
        app = app_for(wb, principal=REVIEWER)
        opened = []
        app.open_url = lambda url, **_: opened.append(url)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("i")
            await until(pilot, lambda: name(app) == "InboxScreen" and made in [p.id for p in app.screen.proposals])
            await settle(pilot)
            row = [p.id for p in app.screen.proposals].index(made)
            await pilot.click("#proposals", offset=(2, row + 1))  # on "click to quit" (the title is the first column)
            await settle(pilot)
            assert app.is_running and app.return_code is None
            app.open_fragment(made)
            await until(pilot, lambda: name(app) == "FragmentScreen" and app.screen.fragment is not None)
            await settle(pilot)
            markdown = app.screen.query_one("#frag-markdown")
            for link in ("file:///etc/passwd", "app.quit", "https://example.com/ok"):
                markdown.post_message(markdown.LinkClicked(markdown, link))
            await settle(pilot)
            assert app.is_running and app.return_code is None
    assert opened == ["https://example.com/ok"]


def test_screens_make_their_widgets_from_the_plain_module():
    """No TUI module constructs a text widget from Textual itself (workbench/tui/plain.py's versions
    never read markup and show control characters visibly); isinstance checks may use Textual's."""
    guarded = {"DataTable", "Input", "Label", "Markdown", "Select", "Static", "TextArea", "Tree"}
    for path in sorted((ROOT / "workbench" / "tui").rglob("*.py")):
        if path.name == "plain.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        from_textual = {alias.asname or alias.name for node in ast.walk(tree)
                        if isinstance(node, ast.ImportFrom) and node.module == "textual.widgets"
                        for alias in node.names} & guarded
        made = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name) and node.func.id in from_textual}
        assert not made, f"{Path(path).relative_to(ROOT)} makes {sorted(made)} from textual.widgets"


async def _generated(hostile_ws, texts: list[str]) -> None:
    ws, _ = hostile_ws
    _generated.n = n = getattr(_generated, "n", 0) + 1
    with Workbench.open(ws) as wb:
        for i, text in enumerate(texts):
            ids = seed(wb, text, tag=f"g{n}.{i}", now=NOW - timedelta(hours=i + 1))
        app = app_for(wb, principal=REVIEWER)
        async with app.run_test(size=SIZE) as pilot:
            await Visit(app, pilot).every_screen(ids)


@pytest.mark.deep   # make test shows the red team's literal text on every screen (above)
@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(hostile_line(), min_size=3, max_size=3))
async def test_generated_hostile_text_is_inert_on_every_screen(hostile_ws, texts):
    await _generated(hostile_ws, texts)


@pytest.mark.slow
@pytest.mark.deep
@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(hostile_line(10), min_size=3, max_size=3))
async def test_more_generated_hostile_text_is_inert_on_every_screen(hostile_ws, texts):
    await _generated(hostile_ws, texts)
