"""The dialogs that review a proposal: accept (the scope it goes into, its owner, an optional
reason) and reject (a reason, required: its author reads it).

They only ask, and check what was typed (a scope written as a scope, a reason); the caller
accepts or rejects through ``app.submit`` (the core decides who may). Accept dismisses with an
``AcceptRequest``, reject with the reason, either with None when cancelled (escape or Cancel).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.containers import Horizontal

from ...errors import WorkbenchError
from ...models import Scope
from ..plain import Input, Label, Static
from .dialog import Dialog, dialog_bindings
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


class AcceptDialog(Dialog):
    """Accept a proposal into a scope, with an owner (both prefilled: where it was proposed, and you)."""

    DEFAULT_CSS = _CSS.replace("NAME", "AcceptDialog")
    BINDINGS = dialog_bindings("accept-dialog", "Accept")
    BUTTON_IDS: ClassVar[dict[str, str]] = {"confirm": "accept-dialog-accept", "cancel": "accept-dialog-cancel-button"}

    def __init__(self, fragment, me: str) -> None:
        super().__init__()
        self.fragment, self.me = fragment, me

    def body(self) -> ComposeResult:
        f = self.fragment
        author = f.content.detail("proposed_by") or f.owner
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

    def confirm(self) -> None:
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
        self.answer(AcceptRequest(scope, owner, reason))


class RejectDialog(Dialog):
    """Reject a proposal, with the reason its author reads (required). Dismisses with the reason."""

    DEFAULT_CSS = _CSS.replace("NAME", "RejectDialog")
    BINDINGS = dialog_bindings("reject-dialog", "Reject")
    VARIANTS: ClassVar[dict[str, str]] = {"confirm": "warning"}
    BUTTON_IDS: ClassVar[dict[str, str]] = {"confirm": "reject-dialog-reject", "cancel": "reject-dialog-cancel-button"}

    def __init__(self, fragment) -> None:
        super().__init__()
        self.fragment = fragment

    def body(self) -> ComposeResult:
        f = self.fragment
        author = f.content.detail("proposed_by") or f.owner
        yield Label(f"Reject {f.id}", classes="pane-title", markup=False)
        yield Static(f"{f.title}\nProposed by {author}, who reads your reason. Nothing is served.",
                     classes="hint", markup=False)
        with Horizontal(classes="dialog-row"):
            yield Label("reason")
            yield Input(placeholder="why not (required; its author reads this)", id="reject-dialog-reason")
        yield Static("", id="reject-dialog-errors", classes="error", markup=False)

    def confirm(self) -> None:
        reason = self.query_one("#reject-dialog-reason", Input).value.strip()
        if not reason:
            self.query_one("#reject-dialog-errors", Static).update("A reason is required: its author reads it.")
            self.query_one("#reject-dialog-reason", Input).focus()
            return
        self.answer(reason)
