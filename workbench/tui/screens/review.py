"""The dialog that accepts a proposal: the scope it goes into, its owner, and an optional reason.

It only asks, and checks that the scope is written as a scope; the caller accepts through
``app.submit`` (the core decides who may). It dismisses with an ``AcceptRequest``, or None when
cancelled (escape or the Cancel button).
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer

from ...errors import WorkbenchError
from ...models import Scope
from ..plain import Input, Label, Static
from .keepwork import KeepsWork
from .pin_dialog import _CSS


@dataclass(frozen=True)
class AcceptRequest:
    scope: Scope
    owner: str
    reason: str | None


def default_owner(fragment, me: str) -> str:
    """The owner an accept proposes: the one the proposal names when that is not its author, else you."""
    author = fragment.content.detail("proposed_by")
    return fragment.owner if fragment.owner != author else me


class AcceptDialog(KeepsWork, ModalScreen[AcceptRequest | None]):
    """Accept a proposal into a scope, with an owner (both prefilled: where it was proposed, and you)."""

    DEFAULT_CSS = _CSS.replace("NAME", "AcceptDialog")
    FORM = True   # the app's plain-character keys never fire here
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="accept-dialog-cancel"),
        Binding("ctrl+s", "submit", "Accept", id="accept-dialog-submit", priority=True),
    ]

    def __init__(self, fragment, me: str) -> None:
        super().__init__()
        self.fragment, self.me = fragment, me

    def compose(self) -> ComposeResult:
        f = self.fragment
        author = f.content.detail("proposed_by") or f.owner
        with Vertical(classes="dialog-box"):
            yield Label(f"Accept {f.id}", classes="pane-title", markup=False)
            yield Static(f"{f.title}\nProposed by {author}. Once accepted it is served to everyone who can see "
                         "its scope.", classes="hint", markup=False)
            with Horizontal(classes="dialog-row"):
                yield Label("scope")
                yield Input(str(f.scope), placeholder="org=ORG[,repo=R][,persona=P]", id="accept-dialog-scope")
            with Horizontal(classes="dialog-row"):
                yield Label("owner")
                yield Input(default_owner(f, self.me), placeholder="a principal", id="accept-dialog-owner")
            with Horizontal(classes="dialog-row"):
                yield Label("reason")
                yield Input(placeholder="why (optional, recorded in the review)", id="accept-dialog-reason")
            yield Static("", id="accept-dialog-errors", classes="error", markup=False)
            with Horizontal(classes="dialog-actions"):
                yield Button("Accept", id="accept-dialog-accept", variant="primary")
                yield Button("Cancel", id="accept-dialog-cancel-button")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#accept-dialog-scope", Input).focus()

    @on(Button.Pressed, "#accept-dialog-accept")
    @on(Input.Submitted)
    def action_submit(self) -> None:
        errors = self.query_one("#accept-dialog-errors", Static)
        try:
            scope = Scope.parse(self.query_one("#accept-dialog-scope", Input).value.strip())
        except WorkbenchError as e:
            errors.update(e.message)
            return
        owner = self.query_one("#accept-dialog-owner", Input).value.strip()
        if not owner:
            errors.update("an owner is required: the principal who keeps it true")
            return
        reason = self.query_one("#accept-dialog-reason", Input).value.strip() or None
        self.dismiss(AcceptRequest(scope, owner, reason))

    @on(Button.Pressed, "#accept-dialog-cancel-button")
    def action_cancel(self) -> None:
        self.leave(lambda: self.dismiss(None))
