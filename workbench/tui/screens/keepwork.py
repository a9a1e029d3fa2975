"""Forms keep work: a screen or dialog holding text the user typed asks before Esc (or Cancel)
throws it away, with the editor's "Discard changes?" dialog (confirm.DiscardScreen).

A form mixes ``KeepsWork`` in before its Screen class and calls ``self.leave(close)`` where it
used to close at once (pop the screen, dismiss with None). What counts as typed: a text field
(Input) or an editable TextArea whose value differs from the one it held once the form was filled
in (``remember_fields``: run on mount, after the form's own on_mount has prefilled it, and again by
a form that fills itself later or whose typing was used up, e.g. by a write). Choices (Select) and
read-only areas (previews) are not typing. The app's quit asks too (``unsaved_text``).

It only asks: it saves nothing, and decides nothing about what the form does with its text.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Input, TextArea


class KeepsWork:
    """Mixin for a Screen or ModalScreen whose fields hold typed text (put it before the Screen class)."""

    DISCARD_WHAT = "what you typed"   # "Leaving now throws away <this>; nothing has been saved."
    _pristine: dict[str, str] | None = None

    def on_mount(self) -> None:   # Textual calls each class's on_mount: this one after the form's own
        self.remember_fields()

    def field_values(self) -> dict[str, str]:
        """Every text field's value, by its place in the form."""
        out: dict[str, str] = {}
        for i, widget in enumerate(self.query("Input, TextArea")):   # type: ignore[attr-defined]
            if isinstance(widget, TextArea) and widget.read_only:
                continue
            if isinstance(widget, Input | TextArea):
                out[widget.id or f"#{i}"] = widget.value if isinstance(widget, Input) else widget.text
        return out

    def remember_fields(self) -> None:
        """From now on, what the fields hold is not unsaved typing."""
        self._pristine = self.field_values()

    def typed(self) -> bool:
        """Whether a field holds text typed since the form was filled in (``remember_fields``)."""
        return self._pristine is not None and self.field_values() != self._pristine

    def unsaved_text(self) -> bool:
        """For the app's quit: would leaving lose typed text?"""
        return bool(getattr(self, "is_mounted", False)) and self.typed()

    def discard_what(self) -> str:
        return self.DISCARD_WHAT

    def leave(self, close: Callable[[], object]) -> None:
        """``close()`` at once when nothing was typed; else ask first (Discard, or keep editing)."""
        if not self.typed():
            close()
            return
        from .confirm import DiscardScreen

        def answered(discard: bool | None) -> None:
            if discard:
                close()
        self.app.push_screen(DiscardScreen(self.discard_what()), answered)   # type: ignore[attr-defined]
