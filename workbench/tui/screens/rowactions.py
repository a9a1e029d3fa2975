"""Actions on a fragment row, for any screen with a table of fragments (Browse, Search, Inbox) and
for the fragment view (the fragment shown): the key grammar's write keys, the same everywhere:
ctrl+e edit, ctrl+k pin, ctrl+u unpin, ctrl+y verify, ctrl+z snooze, ctrl+n archive, and ctrl+o
the row's actions menu (enter opens the row, through the table itself).

A screen mixes ``RowActions`` in before ``WbScreen``, adds ``row_bindings("<screen>")`` to its
BINDINGS (ids ``<screen>-pin`` ...), says which fragment the cursor is on (``row_fragment``) and
which table holds the rows (``ROW_TABLE``). The keys act only while that table has focus (so never
while a text field or a button has focus), on the focused row only. Verify, snooze, unpin and
archive ask first; edit and pin open their own editor or dialog (that is the asking). On a row the
principal receives through a subscription (``RowFragment.received``), only the keys the core allows
it there act (``row_allows``). Writes go through ``app.submit(write=True)``; errors come back as
notifications in the TUI's words; after a write the screen's ``reload()`` runs. Plain letters never act here: they move between screens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from textual.binding import Binding
from textual.widgets import DataTable

from ...models import Scope
from ...service.browse import pin_scopes
from ..messages import plain
from ..offers import WRITE_KEYS

# the grammar's row keys: action → key (the same on every screen and table)
ROW_KEYS = {"edit_row": "ctrl+e", "pin_row": "ctrl+k", "unpin_row": "ctrl+u", "verify_row": "ctrl+y",
            "snooze_row": "ctrl+z", "archive_row": "ctrl+n"}
ROW_ACTIONS = frozenset({*ROW_KEYS, "row_menu", "open_row"})


@dataclass(frozen=True)
class RowFragment:
    """The fragment under a table's cursor, as the table shows it."""

    id: str
    title: str
    scope: Scope
    version: int | None = None    # the version shown, when the table shows one (else the editor takes the latest)
    received: Any = None          # service.received.Received: received through a subscription, as the core says


def row_bindings(prefix: str) -> list[Binding]:
    """The row-action keys, with binding ids ``<prefix>-pin`` and so on."""
    return [
        Binding(ROW_KEYS["edit_row"], "edit_row", "Edit", id=f"{prefix}-edit"),
        Binding(ROW_KEYS["pin_row"], "pin_row", "Pin", id=f"{prefix}-pin", show=False),
        Binding(ROW_KEYS["unpin_row"], "unpin_row", "Unpin", id=f"{prefix}-unpin", show=False),
        Binding(ROW_KEYS["verify_row"], "verify_row", "Verify", id=f"{prefix}-verify"),
        Binding(ROW_KEYS["snooze_row"], "snooze_row", "Snooze", id=f"{prefix}-snooze", show=False),
        Binding(ROW_KEYS["archive_row"], "archive_row", "Archive", id=f"{prefix}-archive", show=False),
        Binding("ctrl+o", "row_menu", "Actions", id=f"{prefix}-actions"),
    ]


class RowActions:
    """Mixin for a WbScreen showing fragments in a table (put it before WbScreen)."""

    ROW_TABLE = ""   # the id of the table whose focused row the keys act on

    def row_fragment(self) -> RowFragment | None:  # pragma: no cover - each screen says
        raise NotImplementedError

    def row_focused(self) -> bool:
        """Whether the row keys may act now: the rows' table has focus (the fragment view: always)."""
        focused = self.focused  # type: ignore[attr-defined]
        return isinstance(focused, DataTable) and focused.id == self.ROW_TABLE

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The row keys act on the focused row only: hidden (and inert) unless the table has focus."""
        if action in ROW_ACTIONS and not self.row_focused():
            return False
        if action in ROW_KEYS and not self.row_allows(action):
            return False
        return super().check_action(action, parameters)  # type: ignore[misc]

    def row_allows(self, action: str) -> bool:
        """A received row (issue 30) offers only the writes the core lets the principal take on it
        (``Received.actions``, from the policy): the others are neither shown, run nor listed."""
        row = self.row_fragment()
        received = getattr(row, "received", None)
        return received is None or WRITE_KEYS.get(action, action) in received.actions

    def on_descendant_focus(self, _event) -> None:
        self.refresh_bindings()  # type: ignore[attr-defined] - the footer shows the focused table's keys

    def on_descendant_blur(self, _event) -> None:
        self.refresh_bindings()  # type: ignore[attr-defined]

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
        scopes = list(row.received.pin_scopes) if row.received is not None else pin_scopes(self.me, row.scope)
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
        """Ask first ("yes, still true"), then restart its staleness clock."""
        from .prompt import ConfirmScreen

        row = self.row_fragment()
        if row is None:
            return
        now = self.app.clock()

        def answered(yes: bool | None) -> None:
            if yes:
                self._row_write(self.wb.verify, row.id, actor=self.me, now=now,
                                message=f"{row.id} verified: still true as of {now:%Y-%m-%d}")
        self.app.push_screen(ConfirmScreen(
            "Verify?", f"Mark {row.id} ({row.title}) as still true as of {now:%Y-%m-%d}? Its staleness clock "
            "starts again.", yes="Verify", no="Cancel"), answered)

    def action_archive_row(self) -> None:
        """Ask first, with the reason the core records: an archived fragment is no longer served."""
        from .prompt import PromptScreen

        row = self.row_fragment()
        if row is None:
            return

        def answered(reason: str | None) -> None:
            if reason:
                self._row_write(self.wb.archive, row.id, actor=self.me, reason=reason, base=row.version,
                                message=f"{row.id} archived (workbench restore brings it back)")
        self.app.push_screen(PromptScreen(f"Archive {row.id}? It is no longer served or listed. Why?",
                                          "the reason (required); esc keeps it"), answered)

    def action_snooze_row(self) -> None:
        from .pin_dialog import SnoozeDialog

        row = self.row_fragment()
        if row is None:
            return

        def snooze(days: int) -> str:
            self.wb.snooze(row.id, days=days, actor=self.me, now=self.app.clock())
            return f"{row.id} snoozed for {days} days"
        self.app.push_screen(SnoozeDialog(row.id, row.title, self.snooze_days()).writing(
            snooze, done=self._row_written, label="snoozing…"))

    def snooze_days(self) -> int:
        """The days the snooze dialog offers first."""
        return 30

    def action_edit_row(self) -> None:
        from .edit import EditScreen

        row = self.row_fragment()
        if row is not None:
            self.app.push_screen(EditScreen(row.id, base=row.version))

    def row_commands(self) -> list[tuple[str, Callable[[], None]]]:
        """The row actions for the command palette (on a received row, those the core allows)."""
        return [(name, fn) for name, fn in (
            ("Edit the highlighted fragment", self.action_edit_row),
            ("Pin the highlighted fragment", self.action_pin_row),
            ("Unpin the highlighted fragment", self.action_unpin_row),
            ("Verify the highlighted fragment", self.action_verify_row),
            ("Snooze the highlighted fragment", self.action_snooze_row),
            ("Archive the highlighted fragment", self.action_archive_row))
            if self.row_allows(fn.__name__.removeprefix("action_"))]

    def action_open_row(self) -> None:
        self.open_row()

    def open_row(self) -> None:
        row = self.row_fragment()
        if row is not None:
            self.app.open_fragment(row.id)
