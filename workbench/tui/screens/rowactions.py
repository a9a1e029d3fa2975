"""Actions on a fragment row, for any screen with a table of fragments (Browse, Search, ...):
P pin, U unpin, v verify, z snooze, e edit (enter opens, through the table itself).

A screen mixes ``RowActions`` in before ``WbScreen``, adds ``row_bindings("<screen>")`` to its
BINDINGS (ids ``<screen>-pin`` ...) and says which fragment the cursor is on
(``row_fragment``). Writes go through ``app.submit(write=True)``; errors come back as
notifications in the TUI's words; after a write the screen's ``reload()`` runs. The letter keys
never fire while a text field or a button has focus.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from textual.binding import Binding
from textual.widgets import Button, Input, TextArea

from ...service.browse import pin_scopes
from ...models import Scope
from ..messages import plain

ROW_ACTIONS = frozenset({"pin_row", "unpin_row", "verify_row", "snooze_row", "edit_row"})


@dataclass(frozen=True)
class RowFragment:
    """The fragment under a table's cursor, as the table shows it."""

    id: str
    title: str
    scope: Scope
    version: int | None = None    # the version shown, when the table shows one (else the editor takes the latest)


def row_bindings(prefix: str) -> list[Binding]:
    """The row-action keys, with binding ids ``<prefix>-pin`` and so on."""
    return [
        Binding("P", "pin_row", "Pin", id=f"{prefix}-pin"),
        Binding("U", "unpin_row", "Unpin", id=f"{prefix}-unpin", show=False),
        Binding("v", "verify_row", "Verify", id=f"{prefix}-verify"),
        Binding("z", "snooze_row", "Snooze", id=f"{prefix}-snooze", show=False),
        Binding("e", "edit_row", "Edit", id=f"{prefix}-edit"),
    ]


class RowActions:
    """Mixin for a WbScreen showing fragments in a table (put it before WbScreen)."""

    # actions bound to plain characters: refused while a text field or a button has focus
    LETTER_ACTIONS: frozenset[str] = ROW_ACTIONS

    def row_fragment(self) -> RowFragment | None:  # pragma: no cover - each screen says
        raise NotImplementedError

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.LETTER_ACTIONS and isinstance(self.focused, (Input, TextArea, Button)):
            return False
        return super().check_action(action, parameters)  # type: ignore[misc]

    def after_row_write(self) -> None:
        """Show the change at once (the screen has seen this data version now)."""
        self._seen_version = self.app.data_version
        reload = getattr(self, "reload", None)
        if reload is not None:
            reload()

    def _row_write(self, fn: Callable[..., Any], *args: Any, message: str, **kwargs: Any) -> None:
        def done(_: Any) -> None:
            self.notify(message, title="Done")
            self.after_row_write()

        def failed(e) -> None:
            self.notify(plain(e), title="Not done", severity="error", timeout=8)
        self.app.submit(fn, *args, done=done, failed=failed, write=True, label="saving…", **kwargs)

    def _row_written(self, message: str) -> None:
        """After a write a row's dialog made (``Dialog.writing``): say so, and show it."""
        self.notify(message, title="Done")
        self.after_row_write()

    def _not_a_lead(self, verb: str) -> None:
        self.notify(f"{self.me.name} is not a tech lead of any scope, so cannot {verb}: pins are set by the "
                    "tech leads named in the workspace configuration (lead_of).",
                    title="Only tech leads pin", severity="warning", timeout=8)

    # -- the actions ------------------------------------------------------------------------

    def action_pin_row(self) -> None:
        from .pin_dialog import PinDialog

        row = self.row_fragment()
        if row is None:
            return
        if not self.me.lead_of:
            self._not_a_lead("pin")
            return
        scopes = pin_scopes(self.me, row.scope)
        if not scopes:
            led = ", ".join(str(s) for s in self.me.lead_of)
            self.notify(f"{row.id} (scope {row.scope}) does not apply in a scope you lead ({led}), so you "
                        "cannot pin it.", title="Not pinned", severity="warning", timeout=8)
            return

        def pin(request) -> str:  # while the dialog is open: a failure leaves it as it was
            self.wb.pin(row.id, scope=request.scope, actor=self.me, reason=request.reason, until=request.until,
                        now=self.app.clock())
            return f"{row.id} pinned in {request.scope}" + (f" until {request.until:%Y-%m-%d}" if request.until else "")
        self.app.push_screen(PinDialog(row.id, row.title, scopes, self.app.clock()).writing(
            pin, done=self._row_written, label="pinning…"))

    def action_unpin_row(self) -> None:
        from .pin_dialog import UnpinDialog

        row = self.row_fragment()
        if row is None:
            return
        if not self.me.lead_of:
            self._not_a_lead("unpin")
            return

        def unpin(request) -> str:
            self.wb.unpin(row.id, scope=request.scope, actor=self.me, reason=request.reason)
            return f"{row.id} unpinned from {request.scope}"

        def got(pins) -> None:
            scopes = [p.scope for p in pins if p.fragment_id == row.id and self.me.leads(p.scope)]
            if not scopes:
                self.notify(f"{row.id} is not pinned in a scope you lead.", title="Not pinned", timeout=6)
                return
            self.app.push_screen(UnpinDialog(row.id, row.title, scopes).writing(unpin, done=self._row_written,
                                                                                label="unpinning…"))
        self.app.submit(self.wb.pins, principal=self.me, done=got, label="reading pins…")

    def action_verify_row(self) -> None:
        row = self.row_fragment()
        if row is not None:
            now = self.app.clock()
            self._row_write(self.wb.verify, row.id, actor=self.me, now=now,
                            message=f"{row.id} verified: still true as of {now:%Y-%m-%d}")

    def action_snooze_row(self) -> None:
        from .pin_dialog import SnoozeDialog

        row = self.row_fragment()
        if row is None:
            return

        def snooze(days: int) -> str:
            self.wb.snooze(row.id, days=days, actor=self.me, now=self.app.clock())
            return f"{row.id} snoozed for {days} days"
        self.app.push_screen(SnoozeDialog(row.id, row.title).writing(snooze, done=self._row_written,
                                                                     label="snoozing…"))

    def action_edit_row(self) -> None:
        from .edit import EditScreen

        row = self.row_fragment()
        if row is not None:
            self.app.push_screen(EditScreen(row.id, base=row.version))

    def row_commands(self) -> list[tuple[str, Callable[[], None]]]:
        """The row actions for the command palette."""
        return [("Pin the highlighted fragment", self.action_pin_row),
                ("Unpin the highlighted fragment", self.action_unpin_row),
                ("Verify the highlighted fragment", self.action_verify_row),
                ("Snooze the highlighted fragment", self.action_snooze_row),
                ("Edit the highlighted fragment", self.action_edit_row)]

    def open_row(self) -> None:
        row = self.row_fragment()
        if row is not None:
            self.app.open_fragment(row.id)
