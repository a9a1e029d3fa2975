"""What the TUI offers a principal: its write keys and its command palette, as the core says.

The core decides which write actions a principal may take at all (``Workbench.actions``: by its
kind and write grants, policy.py's table); this module only knows which policy action each key or
palette command of the TUI takes (``WRITE_KEYS``), so that a key the principal may not use is
neither shown nor run. It decides nothing itself, and every write is still decided by the core on
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
              "ingest_prompt": "create"}


def offers(offered: frozenset[str], action: str) -> bool:
    """Is ``action`` one a principal who may take the policy actions ``offered`` may use? Only the
    keys that write can be refused."""
    wanted = WRITE_KEYS.get(action.removeprefix("action_"))
    return wanted is None or wanted in offered


def system_commands(app: Any, screen: Any, inherited: Iterable[SystemCommand]) -> Iterable[SystemCommand]:
    """The command palette: Textual's own commands, the app's, then the screen's (``commands()``),
    leaving out those that write what the principal may not (``app.offers``)."""
    commands = [*inherited,
                SystemCommand("Browse", "Browse fragments by scope (b)", app.action_browse),
                SystemCommand("Search", "Hybrid search as you type (/)", app.action_search),
                SystemCommand("Nudge inbox", "My stale fragments: verify, snooze, edit (i)", app.action_inbox),
                SystemCommand("Pins", "Pin fragments in the scopes I lead (p)", app.action_pins),
                SystemCommand("New anti-pattern", "Don't / why / instead (n)", app.action_new_antipattern),
                SystemCommand("Gaps", "Questions agents asked that got nothing useful; draft answers (g)",
                              app.action_gaps),
                SystemCommand("Export", "Preview and write an export (x)", app.action_export),
                SystemCommand("Rebuild index", "Embed new text and recompute authority", app.action_rebuild_index),
                SystemCommand("Ingest folder", "Import fragment files from a folder", app.action_ingest_prompt),
                SystemCommand("Help", "Keys and commands (?)", app.action_help),
                *(SystemCommand(name, f"{name} (this screen)", fn)
                  for name, fn in getattr(screen, "commands", list)())]
    return [c for c in commands if app.offers(getattr(c.callback, "__name__", ""))]
