"""Pins: pin a fragment in a scope you lead (it then always reaches agents working there), or unpin.

A fragment is picked by id or title (screens/picker.py lists every match of what is typed, among
what you can see); an optional ``until`` date ends the pin on its own. Non-leads see who may pin
and why they cannot. The table fits its width (``columns.fit``): title, kind, owner, age and scope
first; until, who pinned, when, why and the id fold away on a narrow terminal (→ scrolls to them;
the detail line has them).

A typing screen: ctrl+s pins what the form holds; on the focused row of the pins table, ctrl+u
unpins (asks first), enter opens the fragment, ctrl+o lists both. A printable key typed while
the table has focus goes to the fragment picker.
"""

from __future__ import annotations

from datetime import datetime

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.validation import Function
from textual.widgets import Button, OptionList

from ...errors import WorkbenchError
from ..columns import Column, age_badges, clip, short_name
from ..format import age, scope_label
from ..messages import plain
from ..plain import DataTable, Input, Select, Static, plain_title
from ..table import FitTable
from .base import WbScreen
from .keepwork import KeepsWork
from .picker import FragmentPicker, MatchList

COLUMNS = (
    Column("title", "title", priority=0, min_width=16, max_width=48, grow=True, comfort=24),
    Column("kind", "kind", priority=0, whole=True, max_width=15),
    Column("owner", "owner", priority=1, min_width=9, max_width=20, compact=short_name),
    Column("age", "age", priority=1, whole=True, max_width=9),
    Column("scope", "scope", priority=2, min_width=12, max_width=32),
    Column("until", "until", priority=3, whole=True, max_width=10),
    Column("by", "pinned by", priority=4, min_width=9, max_width=20, compact=short_name),
    Column("at", "at", priority=4, whole=True, max_width=10),
    Column("reason", "reason", priority=5, min_width=16, max_width=60),
    Column("id", "id", priority=5, min_width=16, max_width=32),
)


def load(wb, me) -> tuple[list, list]:
    """(pins in the scopes ``me`` leads, or all pins ``me`` sees; the fragments ``me`` may pick)."""
    pins = wb.pins(principal=me)
    return [p for p in pins if me.leads(p.scope)] or pins, wb.browse(principal=me)


def parse_until(text: str, now: datetime) -> datetime | str | None:
    """The until date typed (None when empty), or why it is not one (a str)."""
    text = text.strip()
    if not text:
        return None
    try:
        day = datetime.strptime(text, "%Y-%m-%d")
    except ValueError:
        return "until: a date like 2027-01-31 (YYYY-MM-DD), or leave it empty"
    if day <= now:
        return f"until: {text} is not in the future"
    return day


class PinsScreen(KeepsWork, WbScreen):
    """Pins: the pins in the scopes you lead; pin by id or title, unpin the focused row with ctrl+u."""

    FORM = True
    DEFAULT_CSS = """
    PinsScreen #pins { height: 1fr; min-height: 4; }
    PinsScreen .pin-row { height: auto; }
    PinsScreen .pin-row Input { width: 1fr; }
    PinsScreen #pin-id { width: 1fr; }
    PinsScreen #pin-scope { width: 1fr; }
    PinsScreen #pin-scope SelectCurrent #label { text-wrap: nowrap; text-overflow: ellipsis; }
    PinsScreen #pin-until { width: 24; }
    PinsScreen .pin-row Button { width: auto; min-width: 8; }
    PinsScreen #pin-detail { height: auto; max-height: 2; }
    PinsScreen #pin-matches { height: auto; max-height: 5; display: none; margin: 0 1; }
    PinsScreen #errors { height: auto; }
    """
    BINDINGS = [
        Binding("ctrl+u", "unpin", "Unpin", id="pins-unpin"),
        Binding("ctrl+o", "row_menu", "Actions", id="pins-actions"),
        Binding("ctrl+s", "pin", "Pin", id="pins-pin"),
        Binding("escape", "back", "Back", id="pins-back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.pins: list = []
        self.titles: dict[str, str] = {}      # id → title of every fragment the user may pick
        self.by_title: dict[str, list[str]] = {}
        self.rows: dict = {}                  # id → the browse row of every fragment the user may pick

    def body(self) -> ComposeResult:
        yield Static("Pins: a pinned fragment always reaches agents working in its scope", classes="pane-title")
        yield Static("", id="pins-who", classes="hint", markup=False)
        yield FitTable(COLUMNS, fixed=1, id="pins")
        yield Static("", id="pin-detail", classes="hint", markup=False)
        with Horizontal(classes="pin-row", id="pin-what"):
            picker = FragmentPicker(placeholder="type an id or a title; ↓ lists the matches", id="pin-id",
                           validators=[Function(self._known, "not a fragment you can see")],
                           validate_on=["changed", "submitted"])
            picker.border_title = "Fragment"
            yield picker
            scope = Select([], prompt="no scope you lead", id="pin-scope")
            yield scope
        yield MatchList(id="pin-matches")
        with Horizontal(classes="pin-row", id="pin-how"):
            until = Input(placeholder="optional", id="pin-until", max_length=10,
                          validators=[Function(lambda v: not isinstance(parse_until(v, self.app.clock()), str),
                                               "a future date, YYYY-MM-DD")],
                          validate_on=["changed", "submitted"])
            until.border_title = "Until (YYYY-MM-DD)"
            yield until
            reason = Input(placeholder="why agents must always see it", id="pin-reason")
            reason.border_title = "Reason"
            yield reason
            yield Button("Pin", id="pin", variant="primary")
        yield Static("", id="errors", classes="error", markup=False)

    def on_mount(self) -> None:
        self.query_one("#pin-scope", Select).query_one("SelectCurrent").border_title = "Scope"
        led = [str(s) for s in self.me.lead_of]
        select = self.query_one("#pin-scope", Select)
        select.set_options([(s, s) for s in led])
        who = self.query_one("#pins-who", Static)
        if led:
            select.value = led[0]
            who.update(f"{self.me.name} leads: {', '.join(led)}")
            self.query_one("#pin-id", Input).focus()
        else:
            who.update(f"{self.me.name} is not a tech lead of any scope, so cannot pin: pins are set by the tech "
                       "leads named in workbench.yaml (lead_of).")
            self.query_one("#pins", DataTable).focus()
        self.reload()

    def reload(self) -> None:
        self.app.submit(load, self.wb, self.me, done=self._loaded, label="loading pins…", key="pins-load")

    def _loaded(self, loaded: tuple[list, list]) -> None:
        self.pins, rows = loaded
        self.titles = {r.id: r.title for r in rows}
        self.rows = {r.id: r for r in rows}
        self.by_title = {}
        for r in rows:
            self.by_title.setdefault(r.title.lower(), []).append(r.id)
        self.query_one("#pin-id", FragmentPicker).set_titles(self.titles)
        self._paint()

    def _values(self) -> list[dict]:
        now, orgs, out = self.app.clock(), self.me.orgs, []
        for p in self.pins:
            r = self.rows.get(p.fragment_id)
            out.append({"title": r.title if r else "", "kind": r.kind if r else "", "owner": r.owner if r else "",
                        "age": age_badges(age(r.last_touched, now), stale=r.stale, pinned=True) if r else "",
                        "scope": scope_label(p.scope, orgs), "until": f"{p.until:%Y-%m-%d}" if p.until else "-",
                        "by": p.pinned_by, "at": f"{p.pinned_at:%Y-%m-%d}", "reason": p.reason or "",
                        "id": p.fragment_id})
        return out

    @on(FitTable.Relaid, "#pins")
    def _paint(self) -> None:
        """Fill the table from the pins read last, laid out for its width."""
        table = self.query_one("#pins", FitTable)
        row = table.cursor_row
        values = self._values()
        table.prepare(values)
        table.clear()
        table.add_rows([table.cells(v) for v in values])
        if values:
            table.move_cursor(row=min(max(row, 0), len(values) - 1))
        self._show_detail()

    # -- the picker ----------------------------------------------------------------------

    def _resolve(self, text: str) -> str | None:
        """The id of the fragment typed (its id, or a title that names one fragment)."""
        text = text.strip()
        if text in self.titles:
            return text
        ids = self.by_title.get(text.lower(), [])
        return ids[0] if len(ids) == 1 else None

    def _known(self, text: str) -> bool:
        return not text.strip() or not self.titles or self._resolve(text) is not None

    @on(Input.Changed, "#pin-id")
    def _picked(self, event: Input.Changed) -> None:
        """Say which fragment the text names, in the field's bottom border; list every match under it."""
        fid = self._resolve(event.value)
        found = [] if fid else self.query_one("#pin-id", FragmentPicker).found()
        self.query_one("#pin-matches", MatchList).show(found)
        if fid:
            event.input.border_subtitle = plain_title(fid if event.value.strip() != fid else clip(self.titles[fid], 60))
        elif found:
            event.input.border_subtitle = f"{len(found)} match{'es' if len(found) > 1 else ''}: → completes, ↓ lists"
        elif event.value.strip():
            event.input.border_subtitle = "no fragment you can see matches"
        else:
            event.input.border_subtitle = ""

    @on(OptionList.OptionSelected, "#pin-matches")
    def _match_chosen(self, event: OptionList.OptionSelected) -> None:
        picker = self.query_one("#pin-id", FragmentPicker)
        picker.value = event.option.id or ""
        picker.cursor_position = len(picker.value)
        picker.focus()

    # -- the table -----------------------------------------------------------------------

    @on(DataTable.RowHighlighted, "#pins")
    def _show_detail(self) -> None:
        detail = self.query_one("#pin-detail", Static)
        pin = self._highlighted()
        if pin is None:
            detail.update("No pins in force in your scopes." if self.me.lead_of else "No pins you can see.")
            return
        table = self.query_one("#pins", FitTable)
        folded = table.folded_text(self._values()[table.cursor_row], skip=("id", "title", "scope", "until", "reason"))
        detail.update(f"{pin.fragment_id} · {self.titles.get(pin.fragment_id, '')} · {pin.scope}"
                      + (f" · until {pin.until:%Y-%m-%d}" if pin.until else "")
                      + (f" · {pin.reason}" if pin.reason else "") + (f" · {folded}" if folded else "")
                      + " · ^u unpins (from the table)")

    def _highlighted(self):
        table = self.query_one("#pins", DataTable)
        if not self.pins or not 0 <= table.cursor_row < len(self.pins):
            return None
        return self.pins[table.cursor_row]

    # -- pin and unpin -------------------------------------------------------------------

    @on(Button.Pressed, "#pin")
    @on(Input.Submitted, "#pin-reason")
    @on(Input.Submitted, "#pin-until")
    @on(Input.Submitted, "#pin-id")
    def _pin_pressed(self) -> None:
        self.action_pin()

    def action_pin(self) -> None:
        errors = self.query_one("#errors", Static)
        scope = self.query_one("#pin-scope", Select).value
        if scope is Select.NULL:
            errors.update(f"{self.me.name} is not a tech lead of any scope: only tech leads may pin.")
            return
        typed = self.query_one("#pin-id", Input).value
        fid = self._resolve(typed)
        if fid is None:
            errors.update("Which fragment? Type its id or title (→ completes a suggestion)." if not typed.strip()
                          else f"{typed.strip()!r} is not the id or title of a fragment you can see.")
            return
        until = parse_until(self.query_one("#pin-until", Input).value, self.app.clock())
        if isinstance(until, str):
            errors.update(until)
            return
        reason = self.query_one("#pin-reason", Input).value.strip() or None
        errors.update("")

        def pinned(_pin) -> None:
            for name in ("#pin-id", "#pin-until", "#pin-reason"):
                self.query_one(name, Input).value = ""
            self.notify(f"pinned {fid} in {scope}" + (f" until {until:%Y-%m-%d}" if until else ""))
            self.query_one("#pin-id", Input).focus()
            self.reload()

        self.app.submit(self.wb.pin, fid, scope=scope, actor=self.me, reason=reason, until=until,
                        now=self.app.clock(), done=pinned, failed=self._failed, label="pinning…", write=True)

    def _failed(self, e: WorkbenchError) -> None:
        self.query_one("#errors", Static).update(plain(e))

    def action_unpin(self) -> None:
        pin = self._highlighted()
        if pin is None:
            return
        from .prompt import ConfirmScreen

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.submit(self.wb.unpin, pin.fragment_id, scope=pin.scope, actor=self.me,
                                done=lambda _: self._unpinned(pin), failed=self._failed, label="unpinning…",
                                write=True)
        self.app.push_screen(ConfirmScreen(
            "Unpin?", f"Unpin {pin.fragment_id} from {pin.scope}? Agents working there will then get it only "
            "when it ranks.", yes="Unpin", no="Keep"), answered)

    def _unpinned(self, pin) -> None:
        self.notify(f"unpinned {pin.fragment_id} from {pin.scope}")
        self.reload()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """ctrl+u and the menu act on the focused row of the pins table only."""
        if action in ("unpin", "open_row") and self.focused is not self.query_one("#pins", DataTable):
            return False
        return super().check_action(action, parameters)

    def typing_field(self):
        return self.query_one("#pin-id", Input)

    def menu_subject(self) -> str:
        pin = self._highlighted()
        return f"{pin.fragment_id} · {pin.scope}" if pin else ""

    @on(DataTable.RowSelected, "#pins")
    def action_open_row(self) -> None:
        pin = self._highlighted()
        if pin is not None:
            self.app.open_fragment(pin.fragment_id)

    def commands(self):
        return [("Unpin the highlighted pin", self.action_unpin)]

    def action_back(self) -> None:
        self.leave(self.app.pop_screen)
