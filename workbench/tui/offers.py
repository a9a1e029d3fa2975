"""What the TUI offers a principal: its write keys and its command palette, as the core says.

The core decides which write actions a principal may take at all (``Workbench.actions``: by its
kind and write grants, policy.py's table); this module only knows which policy action each key or
palette command of the TUI takes (``WRITE_KEYS``), so that a key the principal may not use is
neither shown nor run; and it lists the palette's commands, one entry per action with its key.
It decides nothing itself, and every write is still decided by the core on
its target (a refusal comes back as the screen's message or a notification).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from textual.app import SystemCommand

# a key's action (or a palette command's method, without "action_") → the policy action it takes
WRITE_KEYS = {"edit": "edit", "edit_row": "edit", "revert": "revert", "verify": "verify", "verify_row": "verify",
              "snooze": "snooze", "snooze_row": "snooze", "accept": "review", "reject": "review",
              "_accept_highlighted": "review", "_reject_highlighted": "review", "pin": "pin", "pin_row": "pin",
              "unpin": "unpin", "unpin_row": "unpin", "new_antipattern": "create", "draft": "create",
              "ingest_prompt": "create", "archive_row": "archive"}


def offers(offered: frozenset[str], action: str) -> bool:
    """Is ``action`` one a principal who may take the policy actions ``offered`` may use? Only the
    keys that write can be refused."""
    wanted = WRITE_KEYS.get(action.removeprefix("action_"))
    return wanted is None or wanted in offered


def key_for(app: Any, owner: Any, method: str) -> str:
    """The key of the binding of ``owner`` (the app or a screen) that runs ``method``, as the footer
    shows it ("^z", "b"); "" when no key runs it (the palette is then the way)."""
    name = method.removeprefix("action_")
    names = {name, name.strip("_").removesuffix("_highlighted")}  # inbox's _accept_highlighted → accept
    for bindings in type(owner)._merge_bindings().key_to_bindings.values():
        for b in bindings:
            if b.action in names:
                return app.get_key_display(b)
    return ""


def palette_entry(app: Any, owner: Any, name: str, callback: Any, help_text: str = "") -> SystemCommand:
    """A palette command whose name shows its key, as "Snooze the highlighted fragment  ^z"."""
    key = key_for(app, owner, getattr(callback, "__name__", ""))
    return SystemCommand(f"{name}  {key}" if key else name, help_text, callback)


def system_commands(app: Any, screen: Any, inherited: Iterable[SystemCommand]) -> Iterable[SystemCommand]:
    """The command palette: Textual's own commands, the app's, then the screen's (``commands()``),
    each once, with its key; leaving out those that write what the principal may not (``app.offers``)."""
    own = [("Browse", "Browse fragments by scope", app.action_browse),
           ("Search", "Hybrid search as you type", app.action_search),
           ("Nudge inbox", "My stale fragments: verify, snooze, edit", app.action_inbox),
           ("Pins", "Pin fragments in the scopes I lead", app.action_pins),
           ("New anti-pattern", "Don't / why / instead", app.action_new_antipattern),
           ("Gaps", "Questions agents asked that got nothing useful; draft answers", app.action_gaps),
           ("Export", "Preview and write an export", app.action_export),
           ("Published contexts", "What your scopes publish and subscribe to (read-only)", app.action_published),
           ("Rebuild index", "Embed new text and recompute authority", app.action_rebuild_index),
           ("Ingest folder", "Import fragment files from a folder", app.action_ingest_prompt),
           ("Help", "The key grammar and every key of every screen", app.action_help)]
    commands = [*(palette_entry(app, app, c.title, c.callback, c.help) for c in inherited),
                *(palette_entry(app, app, name, fn, text) for name, text, fn in own),
                *(palette_entry(app, screen, name, fn) for name, fn in getattr(screen, "commands", list)())]
    seen: set[str] = set()
    listed = []
    for c in commands:
        action = getattr(c.callback, "__name__", "")
        if c.title in seen or not app.offers(action):
            continue
        seen.add(c.title)
        listed.append(c)
    return listed
