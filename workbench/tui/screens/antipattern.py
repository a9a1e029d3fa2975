"""Anti-pattern: a form for the don't / why / instead fields."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Button, Input, Label, Static

from ...errors import WorkbenchError
from .base import WbScreen

FIELDS = (("title", "Title: a short name for the mistake"), ("dont", "Don't: what not to do"),
          ("why", "Why: the harm it causes (cite incidents)"), ("instead", "Instead: what to do"),
          ("evidence", "Evidence: incident refs or fragment ids, space-separated (optional)"),
          ("scope", "Scope: org=ORG[,repo=R][,persona=P]"))


class AntiPatternScreen(WbScreen):

    DEFAULT_CSS = """
    .form { height: auto; }
    .form Input { margin: 0 1; width: 1fr; }
    .form Button { width: auto; margin: 0 1; }
    .form Label { padding: 0 1; margin-top: 1; }
    #errors { height: auto; }
    """
    BINDINGS = [
        Binding("ctrl+s", "create", "Create", id="antipattern-create", priority=True),
        Binding("escape", "back", "Back", id="antipattern-back"),
    ]

    def body(self) -> ComposeResult:
        yield Static("New anti-pattern: negative context for agents", classes="pane-title")
        with VerticalScroll(classes="form"):
            for name, label in FIELDS:
                yield Label(label)
                yield Input(id=f"ap-{name}")
            yield Static("", id="errors", classes="error")
            yield Button("Create anti-pattern", id="create", variant="primary")

    def on_mount(self) -> None:
        orgs = self.me.orgs
        if orgs:
            self.query_one("#ap-scope", Input).value = f"org={orgs[0]}"
        self.query_one("#ap-title", Input).focus()

    @on(Button.Pressed, "#create")
    def _pressed(self) -> None:
        self.action_create()

    def action_create(self) -> None:
        values = {name: self.query_one(f"#ap-{name}", Input).value.strip() for name, _ in FIELDS}
        missing = [name for name in ("title", "dont", "why", "instead", "scope") if not values[name]]
        errors = self.query_one("#errors", Static)
        if missing:
            errors.update(f"Required: {', '.join(missing)}")
            return
        try:
            f = self.app.call(self.wb.add_antipattern, title=values["title"], dont=values["dont"], why=values["why"],
                              instead=values["instead"], scope=values["scope"], actor=self.me,
                              evidence=values["evidence"].split() or None)
        except WorkbenchError as e:
            errors.update(e.message)
            return
        self.notify(f"created {f.id}")
        self.app.pop_screen()
        self.app.open_fragment(f.id)

    def action_back(self) -> None:
        self.app.pop_screen()
