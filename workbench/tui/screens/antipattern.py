"""New anti-pattern: a form for don't / why / instead, saved as a fragment agents are told to avoid;
and ``AntiPatternFields``, the same fields as the editor shows them for an existing anti-pattern.

Its id follows the workspace's convention (``nw-ap-<slug of the title>``), chosen by the core.
Evidence and tags are lists: typed comma- or space-separated, shown back as a list when the field
is left, stored as the core splits them (``service.lists``). The form scrolls when the terminal is
short; ctrl+s creates from anywhere in it.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button

from ...errors import WorkbenchError
from ...service.lists import shown_list, split_list
from ..messages import plain
from ..plain import Input, Static
from .base import WbScreen
from .keepwork import KeepsWork

# (field, label, placeholder)
FIELDS = (("title", "Title", "a short name for the mistake"),
          ("dont", "Don't", "what not to do"),
          ("why", "Why", "the harm it causes (cite incidents)"),
          ("instead", "Instead", "what to do instead"),
          ("evidence", "Evidence (optional)", "incident refs, fragment ids or URLs, comma-separated"),
          ("tags", "Tags", "optional: payments, retries"),
          ("scope", "Scope", "org=ORG[,repo=R][,persona=P]"))
LISTS = ("evidence", "tags")
REQUIRED = ("title", "dont", "why", "instead", "scope")


class AntiPatternScreen(KeepsWork, WbScreen):
    """New anti-pattern: don't / why / instead; ctrl+s creates it."""

    FORM = True
    DEFAULT_CSS = """
    AntiPatternScreen #ap-form { height: 1fr; }
    AntiPatternScreen #ap-form Input { width: 1fr; }
    AntiPatternScreen .ap-row { height: auto; }
    AntiPatternScreen #ap-scope { width: 2fr; }
    AntiPatternScreen #ap-tags { width: 1fr; }
    AntiPatternScreen #errors { height: auto; }
    AntiPatternScreen #ap-actions { height: auto; }
    AntiPatternScreen #ap-actions Button { width: auto; margin: 0 1; }
    AntiPatternScreen #ap-actions Static { width: 1fr; padding: 1 1 0 1; }
    """
    BINDINGS = [
        Binding("ctrl+s", "create", "Create", id="antipattern-create", priority=True),
        Binding("escape", "back", "Back", id="antipattern-back"),
    ]

    creating = False  # a create is running: a second ctrl+s must not make a second fragment
    DISCARD_WHAT = "the anti-pattern you typed"

    def body(self) -> ComposeResult:
        yield Static("New anti-pattern: negative context for agents", classes="pane-title")
        with VerticalScroll(id="ap-form"):
            for name, label, hint in FIELDS[:5]:
                yield self._field(name, label, hint)
            with Horizontal(classes="ap-row"):
                for name, label, hint in FIELDS[5:]:
                    yield self._field(name, label, hint)
            yield Static("", id="errors", classes="error", markup=False)
            with Horizontal(id="ap-actions"):
                yield Button("Create anti-pattern", id="create", variant="primary")
                yield Static("^s creates it · esc leaves (asks if typed)", classes="hint")

    @staticmethod
    def _field(name: str, label: str, hint: str) -> Input:
        field = Input(placeholder=hint, id=f"ap-{name}")
        field.border_title = label
        return field

    def on_mount(self) -> None:
        led = [str(s) for s in self.me.lead_of]
        scope = led[0] if led else (f"org={self.me.orgs[0]}" if self.me.orgs else "")
        self.query_one("#ap-scope", Input).value = scope
        self.query_one("#ap-title", Input).focus()

    @on(Input.Blurred, "#ap-evidence, #ap-tags")
    def _as_list(self, event: Input.Blurred) -> None:
        show_as_list(event.input)

    @on(Button.Pressed, "#create")
    def _pressed(self) -> None:
        self.action_create()

    def action_create(self) -> None:
        if self.creating:
            return
        values = {name: self.query_one(f"#ap-{name}", Input).value.strip() for name, _, _ in FIELDS}
        missing = [name for name in REQUIRED if not values[name]]
        errors = self.query_one("#errors", Static)
        if missing:
            errors.update(f"Required: {', '.join(missing)}")
            self.query_one(f"#ap-{missing[0]}", Input).focus()
            return
        errors.update("")
        self.creating = True

        def created(f) -> None:
            self.creating = False
            self.notify(f"created {f.id}")
            self.app.pop_screen()
            self.app.open_fragment(f.id)

        def failed(e: WorkbenchError) -> None:
            self.creating = False
            errors.update(plain(e))
            errors.scroll_visible()
        self.app.submit(self.wb.add_antipattern, title=values["title"], dont=values["dont"], why=values["why"],
                        instead=values["instead"], scope=values["scope"], actor=self.me,
                        evidence=values["evidence"] or None, tags=values["tags"] or None, done=created, failed=failed,
                        label="creating the anti-pattern…", write=True)

    def action_back(self) -> None:
        self.leave(self.app.pop_screen)


def show_as_list(field: Input) -> None:
    """Show a list field's text back as the list it will be stored as (``a, b``)."""
    shown = shown_list(split_list(field.value))
    if shown != field.value:
        field.value = shown


# the fields an anti-pattern is edited in (the editor, edit.py): (field, label)
EDITED = (("dont", "Don't"), ("why", "Why"), ("instead", "Instead"),
          ("evidence", "Evidence (comma-separated: incident refs, fragment ids or URLs)"))


class AntiPatternFields(Vertical):
    """Don't / why / instead / evidence of an anti-pattern being edited: ``load`` one version's,
    ``changed`` says which the user changed since (as the core's ``edit(fields=...)`` takes them)."""

    DEFAULT_CSS = """
    AntiPatternFields { height: auto; }
    AntiPatternFields Input { width: 1fr; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.loaded: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        for name, label in EDITED:
            field = Input(id=f"ap-edit-{name}", select_on_focus=False)   # edited in place, never replaced at a key
            field.border_title = label
            yield field

    def load(self, fragment) -> None:
        for name, _ in EDITED:
            value = fragment.content.detail(name)
            text = shown_list(value) if name == "evidence" else (value or "")
            field = self.query_one(f"#ap-edit-{name}", Input)
            field.value, field.cursor_position = text, 0   # shown from its start
        self.loaded = self.values()

    def values(self) -> dict[str, str]:
        return {name: self.query_one(f"#ap-edit-{name}", Input).value for name, _ in EDITED}

    def changed(self) -> dict[str, str]:
        """The fields whose text differs from the version loaded (none: a body-only edit)."""
        return {k: v for k, v in self.values().items() if v != self.loaded.get(k)}

    def as_text(self) -> str:
        """The fields as lines, for the "your text, not saved" pane after a conflict's reload."""
        return "\n".join(f"{label.split(' (')[0]}: {self.values()[name]}" for name, label in EDITED) + "\n\n"

    @on(Input.Blurred, "#ap-edit-evidence")
    def _as_list(self, event: Input.Blurred) -> None:
        show_as_list(event.input)
