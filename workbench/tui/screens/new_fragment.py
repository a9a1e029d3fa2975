"""New fragment: a form for a title, a kind, a scope, an owner and a markdown body, saved as the
first version of a new fragment (its id follows the org's convention, ``nw-note-<slug>``, chosen
by the core). The Gaps screen opens it prefilled from an unanswered question (``gap``): ctrl+s then
saves a *draft*, a proposal an owner publishes from the inbox once the answer is written (never an
active fragment at once: Workbench.draft_gap); otherwise ctrl+s creates the fragment.

The body takes the room left; at 80×24 the fields, a few lines of body and Create stay on screen.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button

from ...errors import WorkbenchError
from ...service.lists import shown_list, split_list
from ..messages import plain
from ..plain import Input, Select, Static, TextArea
from .base import WbScreen
from .keepwork import KeepsWork

KINDS = ("note", "runbook", "decision", "policy")   # what answers a question (anti-patterns have their own form)


class NewFragmentScreen(KeepsWork, WbScreen):
    """New fragment: title, kind, scope, owner and body; ctrl+s creates it."""

    FORM = True
    DEFAULT_CSS = """
    NewFragmentScreen #nf-form { height: 1fr; }
    NewFragmentScreen .nf-row { height: auto; }
    NewFragmentScreen #nf-title { width: 1fr; }
    NewFragmentScreen #nf-kind { width: 18; }
    NewFragmentScreen #nf-scope { width: 2fr; }
    NewFragmentScreen #nf-owner { width: 1fr; }
    NewFragmentScreen #nf-tags { width: 1fr; }
    NewFragmentScreen #nf-body { height: 1fr; min-height: 4; }
    NewFragmentScreen #errors { height: auto; }
    NewFragmentScreen #nf-actions { height: auto; }
    NewFragmentScreen #nf-actions Button { width: auto; margin: 0 1; }
    NewFragmentScreen #nf-actions Static { width: 1fr; padding: 1 1 0 1; }
    """
    BINDINGS = [
        Binding("ctrl+s", "create", "Create", id="new-fragment-create", priority=True),
        Binding("escape", "back", "Back", id="new-fragment-back"),
    ]

    creating = False  # a create is running: a second ctrl+s must not make a second fragment

    def __init__(self, *, title: str = "", body: str = "", scope: str = "", kind: str = "note",
                 heading: str = "New fragment", reason: str | None = None, gap: str | None = None) -> None:
        super().__init__()
        self.gap = gap   # the question a draft answers: saved as a proposal, not a fragment
        self.draft = {"title": title, "body": body, "scope": scope, "kind": kind if kind in KINDS else "note"}
        self.heading = heading
        self.reason = reason

    def body(self) -> ComposeResult:
        yield Static(self.heading, classes="pane-title", markup=False)
        with Vertical(id="nf-form"):
            with Horizontal(classes="nf-row"):
                yield self._field("title", "Title", "what the fragment answers")
                kind = Select([(k, k) for k in KINDS], value=self.draft["kind"], allow_blank=False, id="nf-kind")
                kind.border_title = "Kind"
                yield kind
            with Horizontal(classes="nf-row"):
                yield self._field("scope", "Scope", "org=ORG[,repo=R][,persona=P]")
                yield self._field("owner", "Owner", "a principal (default: you)")
                yield self._field("tags", "Tags", "optional: a, b")
            body = TextArea(self.draft["body"], id="nf-body", soft_wrap=True)
            body.border_title = "Body (markdown)"
            yield body
            yield Static("", id="errors", classes="error", markup=False)
            with Horizontal(id="nf-actions"):
                yield Button("Save draft" if self.gap else "Create fragment", id="create", variant="primary")
                yield Static("^s saves a draft for an owner to publish (inbox) · esc leaves (asks if typed)"
                             if self.gap else "^s creates it · esc leaves (asks if typed)", classes="hint")

    def _field(self, name: str, label: str, hint: str) -> Input:
        field = Input(self.draft.get(name, ""), placeholder=hint, id=f"nf-{name}")
        field.border_title = label
        return field

    def on_mount(self) -> None:
        super().on_mount()
        if not self.draft["scope"]:
            led = [str(s) for s in self.me.lead_of]
            self.query_one("#nf-scope", Input).value = led[0] if led else (f"org={self.me.orgs[0]}"
                                                                          if self.me.orgs else "")
        self.query_one("#nf-owner", Input).value = self.me.name
        self.query_one("#nf-title", Input).focus()

    def values(self) -> dict[str, str]:
        return {"title": self.query_one("#nf-title", Input).value.strip(),
                "kind": str(self.query_one("#nf-kind", Select).value),
                "scope": self.query_one("#nf-scope", Input).value.strip(),
                "owner": self.query_one("#nf-owner", Input).value.strip(),
                "tags": self.query_one("#nf-tags", Input).value.strip(),
                "body": self.query_one("#nf-body", TextArea).text}

    @on(Input.Blurred, "#nf-tags")
    def _as_list(self, event: Input.Blurred) -> None:
        shown = shown_list(split_list(event.value))   # the list it will be stored as
        if shown != event.value:
            event.input.value = shown

    @on(Button.Pressed, "#create")
    def _pressed(self) -> None:
        self.action_create()

    def action_create(self) -> None:
        if self.creating:
            return
        values = self.values()
        missing = [name for name in ("title", "scope", "body") if not values[name].strip()]
        errors = self.query_one("#errors", Static)
        if missing:
            errors.update(f"Required: {', '.join(missing)}")
            self.query_one(f"#nf-{missing[0]}").focus()
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

        if self.gap:
            def drafted(f) -> None:
                self.creating = False
                self.notify(f"drafted {f.id}: a proposal, served to no one until an owner writes the answer and "
                            "accepts it (inbox, i)")
                self.app.pop_screen()
                reload = getattr(self.app.screen, "reload", None)
                if reload is not None:   # the gaps screen: the drafted question is no longer open
                    reload()
            self.app.submit(self.wb.draft_gap, self.gap, title=values["title"], body=values["body"],
                            kind=values["kind"], scope=values["scope"], owner=values["owner"] or None,
                            tags=values["tags"] or None, principal=self.me, now=self.app.now, done=drafted, failed=failed,
                            label="saving the draft…", write=True)
            return
        self.app.submit(self.wb.add_fragment, title=values["title"], body=values["body"], kind=values["kind"],
                        scope=values["scope"], owner=values["owner"] or None, tags=values["tags"] or None,
                        actor=self.me, reason=self.reason,
                        done=created, failed=failed, label="creating the fragment…", write=True)

    def discard_what(self) -> str:
        return "your draft" if self.gap else "the fragment you typed"

    def action_back(self) -> None:
        self.leave(self.app.pop_screen)
