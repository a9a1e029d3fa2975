"""Issue 29, forms keep work (the TUI): every form and dialog with a field asks before Esc throws
typed text away ("Discard changes?", the editor's dialog): keep editing keeps the text, discard
leaves; with nothing typed Esc leaves at once. Lists typed into the forms are stored as lists."""

from __future__ import annotations

import pytest
from tui_support import NOW, SMALL, app_for, settle, until

from workbench import Workbench
from workbench.models import Scope

AP = "nw-ap-retry-without-idempotency-key"
SCOPE = Scope.parse("org=northwind,repo=payments-api")


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        yield bench


def _antipattern(wb):
    from workbench.tui.screens.antipattern import AntiPatternScreen
    return AntiPatternScreen()


def _new_fragment(wb):
    from workbench.tui.screens.new_fragment import NewFragmentScreen
    return NewFragmentScreen()


def _gap_draft(wb):
    from workbench.tui.screens.new_fragment import NewFragmentScreen
    return NewFragmentScreen(title="What is the leave policy", body="Agents asked.\n", scope="org=northwind",
                             gap="what is the leave policy")


def _pin(wb):
    from workbench.tui.screens.pin_dialog import PinDialog
    return PinDialog(AP, "Retrying", [SCOPE], NOW)


def _unpin(wb):
    from workbench.tui.screens.pin_dialog import UnpinDialog
    return UnpinDialog(AP, "Retrying", [SCOPE])


def _snooze(wb):
    from workbench.tui.screens.pin_dialog import SnoozeDialog
    return SnoozeDialog(AP, "Retrying")


def _accept(wb):
    from workbench.tui.screens.review import AcceptDialog
    return AcceptDialog(wb.get(AP, principal="marco.bianchi"), "marco.bianchi")


def _reject(wb):
    from workbench.tui.screens.prompt import PromptScreen
    return PromptScreen("Reject prop-1: why? (its author reads this)", "the reason (required)")


def _revert(wb):
    from workbench.tui.screens.revert import RevertScreen
    return RevertScreen(AP, wb.history(AP, principal="marco.bianchi")[0], current=1, diff="")


def _export(wb):
    from workbench.tui.screens.export import ExportScreen
    return ExportScreen()


def _pins(wb):
    from workbench.tui.screens.pins import PinsScreen
    return PinsScreen()


# (name, the form, the field typed into, in make test): every form shares keepwork.KeepsWork, so make test
# runs a screen form, a body (TextArea), a dialog and a prompt; make test-deep runs every form
FORMS = [
    ("anti-pattern", _antipattern, "#ap-dont", True), ("new fragment", _new_fragment, "#nf-body", True),
    ("gap draft", _gap_draft, "#nf-title", False), ("pin dialog", _pin, "#pin-dialog-reason", True),
    ("unpin dialog", _unpin, "#unpin-dialog-reason", False), ("snooze dialog", _snooze, "#snooze-dialog-days", False),
    ("accept dialog", _accept, "#accept-dialog-reason", False), ("reject prompt", _reject, "#prompt-input", True),
    ("revert dialog", _revert, "#revert-reason", False), ("export form", _export, "#export-dir", False),
    ("pins form", _pins, "#pin-reason", False),
]


def value(widget) -> str:
    return widget.text if hasattr(widget, "text") and not hasattr(widget, "cursor_position") else widget.value


@pytest.mark.parametrize("make, field", [pytest.param(make, field, id=name, marks=() if quick else pytest.mark.deep)
                                         for name, make, field, quick in FORMS])
async def test_a_form_asks_before_esc_discards_what_was_typed(wb, make, field):
    app = app_for(wb)
    answers = []
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        home = app.screen
        # nothing typed: esc leaves at once
        app.push_screen(make(wb), answers.append)
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is home
        # typed: esc asks; keep editing keeps the text
        app.push_screen(make(wb), answers.append)
        await settle(pilot)
        form = app.screen
        widget = form.query_one(field)
        widget.focus()
        await pilot.press("end", "4", "2")
        await settle(pilot)
        typed = value(widget)
        assert typed.endswith("42") if hasattr(widget, "cursor_position") else "42" in typed
        await pilot.press("escape")
        await settle(pilot)
        assert type(app.screen).__name__ == "DiscardScreen"
        await pilot.press("escape")          # = keep editing
        await settle(pilot)
        assert app.screen is form and value(form.query_one(field)) == typed
        await pilot.press("escape")
        await settle(pilot)
        assert type(app.screen).__name__ == "DiscardScreen"
        await pilot.press("ctrl+d")          # discard: the form leaves, answering nothing
        await until(pilot, lambda: app.screen is home)
    assert all(answer is None for answer in answers)


async def test_quitting_from_a_typed_form_asks_first(wb):
    from workbench.tui.screens.antipattern import AntiPatternScreen

    app = app_for(wb)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        app.push_screen(AntiPatternScreen())
        await settle(pilot)
        form = app.screen
        form.query_one("#ap-title").focus()
        await pilot.press(*"Logging", "ctrl+q")
        await settle(pilot)
        assert type(app.screen).__name__ == "DiscardScreen"
        assert "the anti-pattern you typed" in str(app.screen.query("Label")[1].render())
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is form and form.query_one("#ap-title").value == "Logging"
