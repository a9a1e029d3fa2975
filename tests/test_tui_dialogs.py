"""One dialog grammar (workbench/tui/screens/dialog.py), checked on every dialog of the TUI: its
buttons are visible and carry the footer's words; ctrl+s and enter confirm, escape cancels; the
first field has focus on open; a letter typed on a focused button lands in the dialog's field; and
the focused widget looks different from the others even with 16 colours.

Each dialog is opened on a bare Textual app with the TUI's stylesheet (no workspace is needed to
ask a question), with real fragments and versions from the shared sample workspace."""

from __future__ import annotations

from datetime import datetime

import pytest
from textual.app import App
from textual.widgets import Button, Input

from workbench.tui.app import WorkbenchApp

FID = "nw-rb-psp-failover"
NOW = datetime(2026, 11, 30, 12, 0)


class Host(App):
    """A bare app with the TUI's stylesheet: the dialogs are pushed on it and their answers kept."""

    CSS_PATH = WorkbenchApp.CSS_PATH

    def __init__(self) -> None:
        super().__init__()
        self.answers: list = []

    def ask(self, dialog) -> None:
        self.push_screen(dialog, self.answers.append)


def _dialogs(wb):
    """name -> (a fresh dialog, how to fill its required fields, what confirming answers, what
    cancelling answers). Covers every Dialog subclass (checked below)."""
    from workbench.models import Scope
    from workbench.service.impact_report import ImpactReport
    from workbench.tui.screens import confirm, conflict, pin_dialog, prompt, revert, review

    fragment = wb.get(FID, principal="marco.bianchi")
    version = wb.history(FID, principal="marco.bianchi")[0]
    scope = Scope.parse("org=northwind,repo=payments-api")

    def typed(selector, text):
        def fill(dialog):
            dialog.query_one(selector, Input).value = text
        return fill

    def nothing(dialog):
        return None

    return {
        "discard": (lambda: confirm.DiscardScreen("your changes"), nothing, False, False),  # ctrl+s keeps the work
        "save-anyway": (lambda: confirm.SaveAnywayScreen(ImpactReport(FID, None, 10, hidden_changed=1)), nothing,
                        True, False),
        "confirm": (lambda: prompt.ConfirmScreen("Overwrite?", "out/ holds files.", yes="Overwrite"), nothing,
                    True, False),
        "prompt": (lambda: prompt.PromptScreen("Ingest from folder:", confirm="Ingest"),
                   typed("#prompt-input", "sample_corpus"), "sample_corpus", None),
        "pin": (lambda: pin_dialog.PinDialog(FID, fragment.title, [scope], NOW), nothing,
                pin_dialog.PinRequest(scope, None, None), None),
        "unpin": (lambda: pin_dialog.UnpinDialog(FID, fragment.title, [scope]), nothing,
                  pin_dialog.UnpinRequest(scope, None), None),
        "snooze": (lambda: pin_dialog.SnoozeDialog(FID, fragment.title), nothing, 30, None),
        "accept": (lambda: review.AcceptDialog(fragment, "marco.bianchi"), nothing,
                   review.AcceptRequest(fragment.scope, review.default_owner(fragment, "marco.bianchi"), None), None),
        "reject": (lambda: review.RejectDialog(fragment), typed("#reject-dialog-reason", "not ours"), "not ours",
                   None),
        "revert": (lambda: revert.RevertScreen(FID, version, current=version.number + 1, diff="-a\n+b\n"),
                   typed("#revert-reason", "undo"), "undo", None),
        "conflict": (lambda: conflict.ConflictScreen(FID, "changed meanwhile", base=1, latest=2, diff=""), nothing,
                     conflict.KEEP, None),
    }


NAMES = ["discard", "save-anyway", "confirm", "prompt", "pin", "unpin", "snooze", "accept", "reject", "revert",
         "conflict"]


def footer_words(dialog) -> list[str]:
    return [b.description for (_, b, _, _) in dialog.active_bindings.values() if b.show]


def test_every_dialog_is_in_the_shared_frame_and_covered_here(sample_wb):
    """A new dialog must use the frame (and be added to the parametrized test below)."""
    from textual.screen import ModalScreen

    from workbench.tui.screens.dialog import Dialog
    from workbench.tui.screens.help import screen_classes

    dialogs = {type(make()) for make, *_ in _dialogs(sample_wb).values()}
    modal = {cls for cls in screen_classes() if issubclass(cls, ModalScreen) and cls is not Dialog}
    views = {"DiffScreen", "ActionsMenu"}  # a modal view, and the ctrl+o menu whose rows are the choices
    assert {cls for cls in modal if cls.__name__ not in views} == dialogs
    assert all(issubclass(cls, Dialog) for cls in dialogs)


@pytest.mark.parametrize("name", NAMES)
async def test_a_dialog_confirms_with_ctrl_s_and_enter_and_cancels_with_escape(sample_wb, name):
    make, fill, confirmed, cancelled = _dialogs(sample_wb)[name]
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        for key, expected in (("ctrl+s", confirmed), ("enter", confirmed), ("escape", cancelled)):
            dialog = make()
            app.ask(dialog)
            await pilot.pause()
            buttons = list(dialog.query(Button))
            assert buttons and all(b.region.height > 0 and b.region.right <= 80 for b in buttons), name
            assert [str(b.label) for b in buttons] == footer_words(dialog), name
            assert footer_words(dialog)[-1] in ("Cancel", "Keep editing") and len(buttons) >= 2
            assert dialog.focused is dialog.first_focus() is not None  # the first field (or the confirm button)
            assert not dialog.has_typed_text()
            fill(dialog)
            typed = dialog.has_typed_text()
            await pilot.press(key)
            await pilot.pause()
            if key == "escape" and typed:   # a typed reason is not thrown away by one key
                assert type(app.screen).__name__ == "DiscardScreen" and app.answers[-1:] != [cancelled], name
                await pilot.press("ctrl+d")
                await pilot.pause()
            assert app.screen is not dialog and app.answers[-1] == expected, (name, key)


async def test_discarding_typed_work_takes_its_own_key(sample_wb):
    """"Discard changes?" keeps the work on ctrl+s (a reflex to save), enter and esc; only ctrl+d or
    its Discard button throws the text away."""
    from workbench.tui.screens.confirm import DiscardScreen

    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        for key, expected in (("ctrl+s", False), ("enter", False), ("escape", False), ("ctrl+d", True)):
            app.ask(DiscardScreen("your changes"))
            await pilot.pause()
            await pilot.press(key)
            await pilot.pause()
            assert app.answers[-1] is expected, key
        dialog = DiscardScreen("your changes")
        app.ask(dialog)
        await pilot.pause()
        await pilot.click("#discard-yes-button")
        await pilot.pause()
        assert app.answers[-1] is True


@pytest.mark.parametrize("name", ["reject", "revert"])
async def test_a_letter_typed_on_a_focused_button_goes_to_the_reason(sample_wb, name):
    """At 80×24 a reason was typed into the Save button: now the letters land in the field."""
    make, _, _, _ = _dialogs(sample_wb)[name]
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = make()
        app.ask(dialog)
        await pilot.pause()
        dialog.query(Button).first().focus()
        await pilot.press(*"no")
        field = dialog.fields()[0]
        assert field.value == "no" and dialog.focused is field and dialog.has_typed_text()
        await pilot.press("enter")
        await pilot.pause()
        assert app.answers == ["no"]


async def test_a_required_reason_is_asked_for_and_nothing_is_answered_without_it(sample_wb):
    make, _, _, _ = _dialogs(sample_wb)["reject"]
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = make()
        app.ask(dialog)
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is dialog and not app.answers
        assert "reason is required" in str(dialog.query_one("#reject-dialog-errors").render())


async def test_focus_shows_by_shape_and_reverse_video_with_16_colours(sample_wb):
    """The focused field has a heavy border (the others a thin one), the focused button is reversed,
    the focused table's cursor row is reversed: all of it reads in the ANSI theme (16 colours)."""
    from textual.widgets import DataTable

    make, _, _, _ = _dialogs(sample_wb)["pin"]
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        app.theme = "ansi-dark"
        dialog = make()
        app.ask(dialog)
        await pilot.pause()
        until, reason = dialog.query_one("#pin-dialog-until"), dialog.query_one("#pin-dialog-reason")
        assert dialog.focused is until
        assert until.styles.border.top[0] == "heavy" and reason.styles.border.top[0] != "heavy"
        button = dialog.query_one("#pin-dialog-pin", Button)
        assert not button.styles.text_style.reverse
        button.focus()
        await pilot.pause()
        assert button.styles.text_style.reverse and until.styles.border.top[0] != "heavy"
        await pilot.press("escape")
        table = DataTable()
        await app.screen.mount(table)
        table.add_columns("a", "b")
        table.add_rows([("1", "2"), ("3", "4")])
        table.blur()
        await pilot.pause()
        assert not table.get_component_rich_style("datatable--cursor").reverse
        table.focus()
        await pilot.pause()
        assert table.get_component_rich_style("datatable--cursor").reverse
