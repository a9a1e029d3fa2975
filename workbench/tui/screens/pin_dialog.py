"""Small dialogs for the actions on a fragment row: pin (scope, until, reason), unpin (scope,
reason) and snooze (days).

They only ask, and check what was typed in the TUI's words (a date after today, a whole number
of days); the caller makes the change through ``app.submit``. Each dismisses with its answer,
or None when cancelled (escape or the Cancel button). The frame (buttons, keys, focus) is
``dialog.Dialog``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import ClassVar

from textual.app import ComposeResult
from textual.containers import Horizontal

from ...models import Scope
from ...service.staleness import MAX_DAYS
from ..plain import Input, Label, Select, Static
from .dialog import Dialog, dialog_bindings

_CSS = """
NAME .dialog-row { height: auto; }
NAME .dialog-row Label { width: 8; padding: 1 1 0 0; }
NAME .dialog-row Input, NAME .dialog-row Select { width: 1fr; }
NAME .error { height: auto; }
"""


@dataclass(frozen=True)
class PinRequest:
    scope: Scope
    until: datetime | None
    reason: str | None


@dataclass(frozen=True)
class UnpinRequest:
    scope: Scope
    reason: str | None


def parse_until(text: str, now: datetime) -> datetime | None:
    """An optional end date typed as YYYY-MM-DD, after today; raises ValueError in plain words."""
    text = text.strip()
    if not text:
        return None
    try:
        day = date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"“{text}” is not a date: type it as YYYY-MM-DD, e.g. {now.year + 1}-01-31") from None
    if day <= now.date():
        raise ValueError(f"{day} is not after today ({now.date()}): a pin ends on a future date")
    return datetime(day.year, day.month, day.day)


def parse_days(text: str) -> int:
    """A whole number of days from 1 to MAX_DAYS; raises ValueError in plain words."""
    text = text.strip()
    if not text.isdigit() or not 1 <= int(text) <= MAX_DAYS:
        raise ValueError(f"days must be a whole number from 1 to {MAX_DAYS}")
    return int(text)


def _scope_options(scopes: list[Scope]) -> list[tuple[str, str]]:
    return [(str(s), str(s)) for s in scopes]


class PinDialog(Dialog):
    """Pin a fragment in one of the scopes you lead, optionally until a date."""

    DEFAULT_CSS = _CSS.replace("NAME", "PinDialog")
    BINDINGS = dialog_bindings("pin-dialog", "Pin")
    BUTTON_IDS: ClassVar[dict[str, str]] = {"confirm": "pin-dialog-pin", "cancel": "pin-dialog-cancel-button"}

    def __init__(self, fragment_id: str, title: str, scopes: list[Scope], now: datetime) -> None:
        super().__init__()
        self.fragment_id, self.fragment_title, self.scopes, self.now = fragment_id, title, scopes, now

    def body(self) -> ComposeResult:
        yield Label(f"Pin {self.fragment_id}", classes="pane-title", markup=False)
        yield Static(f"{self.fragment_title}\nA pinned fragment always reaches agents working in its scope.",
                     classes="hint", markup=False)
        with Horizontal(classes="dialog-row"):
            yield Label("scope")
            yield Select(_scope_options(self.scopes), allow_blank=False, id="pin-dialog-scope")
        with Horizontal(classes="dialog-row"):
            yield Label("until")
            yield Input(placeholder="YYYY-MM-DD, or empty: no end", id="pin-dialog-until")
        with Horizontal(classes="dialog-row"):
            yield Label("reason")
            yield Input(placeholder="why it matters (optional)", id="pin-dialog-reason")
        yield Static("", id="pin-dialog-errors", classes="error", markup=False)

    def confirm(self) -> None:
        try:
            until = parse_until(self.query_one("#pin-dialog-until", Input).value, self.now)
        except ValueError as e:
            self.query_one("#pin-dialog-errors", Static).update(str(e))
            return
        scope = Scope.parse(str(self.query_one("#pin-dialog-scope", Select).value))
        reason = self.query_one("#pin-dialog-reason", Input).value.strip() or None
        self.answer(PinRequest(scope, until, reason))


class UnpinDialog(Dialog):
    """Unpin a fragment from one of the scopes you lead where it is pinned."""

    DEFAULT_CSS = _CSS.replace("NAME", "UnpinDialog")
    BINDINGS = dialog_bindings("unpin-dialog", "Unpin")
    VARIANTS: ClassVar[dict[str, str]] = {"confirm": "warning"}
    BUTTON_IDS: ClassVar[dict[str, str]] = {"confirm": "unpin-dialog-unpin", "cancel": "unpin-dialog-cancel-button"}

    def __init__(self, fragment_id: str, title: str, scopes: list[Scope]) -> None:
        super().__init__()
        self.fragment_id, self.fragment_title, self.scopes = fragment_id, title, scopes

    def body(self) -> ComposeResult:
        yield Label(f"Unpin {self.fragment_id}", classes="pane-title", markup=False)
        yield Static(self.fragment_title, classes="hint", markup=False)
        with Horizontal(classes="dialog-row"):
            yield Label("scope")
            yield Select(_scope_options(self.scopes), allow_blank=False, id="unpin-dialog-scope")
        with Horizontal(classes="dialog-row"):
            yield Label("reason")
            yield Input(placeholder="why (optional)", id="unpin-dialog-reason")

    def confirm(self) -> None:
        scope = Scope.parse(str(self.query_one("#unpin-dialog-scope", Select).value))
        self.answer(UnpinRequest(scope, self.query_one("#unpin-dialog-reason", Input).value.strip() or None))


class SnoozeDialog(Dialog):
    """Snooze a fragment: keep it off the stale list for a number of days."""

    DEFAULT_CSS = _CSS.replace("NAME", "SnoozeDialog")
    BINDINGS = dialog_bindings("snooze-dialog", "Snooze")
    BUTTON_IDS: ClassVar[dict[str, str]] = {"confirm": "snooze-dialog-snooze", "cancel": "snooze-dialog-cancel-button"}

    def __init__(self, fragment_id: str, title: str, days: int = 30) -> None:
        super().__init__()
        self.fragment_id, self.fragment_title, self.days = fragment_id, title, days

    def body(self) -> ComposeResult:
        yield Label(f"Snooze {self.fragment_id}", classes="pane-title", markup=False)
        yield Static(f"{self.fragment_title}\nKeep it off the stale list (and your inbox) for a while.",
                     classes="hint", markup=False)
        with Horizontal(classes="dialog-row"):
            yield Label("days")
            yield Input(str(self.days), placeholder="number of days", id="snooze-dialog-days")
        yield Static("", id="snooze-dialog-errors", classes="error", markup=False)

    def confirm(self) -> None:
        try:
            days = parse_days(self.query_one("#snooze-dialog-days", Input).value)
        except ValueError as e:
            self.query_one("#snooze-dialog-errors", Static).update(str(e))
            return
        self.answer(days)
