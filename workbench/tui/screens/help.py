"""Help: every key of every screen, grouped by screen, with human key names.

Generated from the bindings themselves (every screen class of this package, found by import, and
the app's own), so it cannot drift from what the keys do. Each screen's first docstring line says
what the screen is for.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Iterator

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen

from ..plain import Markdown
from .base import WbScreen

# Textual's own keys on every screen (focus movement, copy): not ours to document per screen.
INHERITED = {"tab", "shift+tab", "ctrl+c", "super+c"}

INTRO = """# workbench keys

Curate what AI agents know: versioned, scoped, owned fragments. The keys follow one grammar:

1. **A plain character never changes anything.** Letters only move between screens (**b** browse,
   **/** search, **i** inbox, **p** pins, **g** gaps, **x** export, **n** new anti-pattern, **?** help,
   **q** quit) or change the view (**t** tree, **s** stale only, **f** filter, **m** details, **d** diff,
   **r** reload), and never while a text field or a button has focus.
2. **Keys that write are ctrl+letter**, the same on every screen, and act on the focused row only
   (a table must have focus; on a fragment, the fragment shown): **^e** edit, **^k** pin, **^u** unpin,
   **^y** verify ("yes, still true"), **^z** snooze, **^n** archive, **^a** accept and **^r** reject a
   proposal, **^r** revert (fragment), **^d** draft (gaps). **^o** opens the row's actions menu: every
   action you may take on that row, with its key. **enter** opens the row.
3. **Destructive writes ask first**: verify, snooze, unpin, revert, archive and reject open a dialog;
   edit and pin open their own editor or dialog.
4. **Typing screens** (search, edit, pins, export, the forms and dialogs): a character typed while a
   table or list has focus goes to the screen's text field. On Search, **/** goes to the query from
   anywhere, **up** on the first result and **esc** on the results return to it, **esc** on the query goes back.
5. **Dialogs**: **^s** confirms, **enter** too (unless a multi-line field has focus), **esc** cancels,
   asking first when you typed something. In "Discard changes?" **^s**, **enter** and **esc** keep
   your text; only **^d** throws it away.
6. **^p** opens the command palette: every action once, with its key. **^q** quits from anywhere,
   asking first if an edit is unsaved.
"""


def screen_classes() -> list[type[Screen]]:
    """Every Screen subclass defined in this package, in a stable order (full screens first)."""
    from .. import screens

    found: dict[str, type[Screen]] = {}
    for info in pkgutil.iter_modules(screens.__path__):
        module = importlib.import_module(f"{screens.__name__}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Screen) and cls.__module__ == module.__name__ and cls is not WbScreen:
                found[cls.__name__] = cls
    return sorted(found.values(), key=lambda c: (not issubclass(c, WbScreen), screen_title(c)))


def screen_title(cls: type) -> str:
    name = cls.__name__.removesuffix("Screen")
    return {"AntiPattern": "New anti-pattern", "Discard": "Discard changes? (dialog)",
            "Conflict": "Edit conflict (dialog)", "Prompt": "Prompt (dialog)",
            "Confirm": "Confirm (dialog)", "Diff": "Diff versions (dialog)", "Revert": "Revert? (dialog)",
            "PinDialog": "Pin (dialog)", "UnpinDialog": "Unpin (dialog)", "SnoozeDialog": "Snooze (dialog)",
            "AcceptDialog": "Accept a proposal (dialog)", "RejectDialog": "Reject a proposal (dialog)",
            "ActionsMenu": "Row actions (ctrl+o)",
            "StartFailed": "Start-up failure"}.get(name, name)


def own_bindings(cls: type) -> Iterator[Binding]:
    seen: set[str] = set()
    for key, bindings in cls._merge_bindings().key_to_bindings.items():
        for b in bindings:
            if key in INHERITED or (b.id or key) in seen:
                continue
            seen.add(b.id or key)
            yield b


def purpose(cls: type) -> str:
    """The first paragraph of the screen's module docstring (each screen module describes its screen)."""
    doc = inspect.getdoc(inspect.getmodule(cls)) or ""
    return doc.split("\n\n")[0].replace("\n", " ").strip()


def help_markdown(app) -> str:
    def row(b: Binding) -> str:
        return f"| **{app.get_key_display(b)}** | {b.description or b.action} | `{b.id or ''}` |"

    parts = [INTRO, "## Everywhere", "", "| key | does | binding id |", "|---|---|---|",
             *(row(b) for b in own_bindings(type(app)))]
    for cls in screen_classes():
        keys = list(own_bindings(cls))
        if not keys:
            continue
        parts += ["", f"## {screen_title(cls)}", "", purpose(cls) if purpose(cls) else "", "",
                  "| key | does | binding id |", "|---|---|---|", *(row(b) for b in keys)]
    return "\n".join(parts) + "\n"


class HelpScreen(WbScreen):
    """Every key of every screen, generated from the bindings."""

    BINDINGS = [Binding("escape", "back", "Back", id="help-back")]

    def body(self) -> ComposeResult:
        with VerticalScroll(id="help-scroll"):
            yield Markdown(help_markdown(self.app), id="help-text")

    def on_mount(self) -> None:
        self.query_one("#help-scroll").focus()

    def action_back(self) -> None:
        self.app.pop_screen()
