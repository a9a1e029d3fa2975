"""Help: every key binding (by id) and every command of the palette."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Markdown

from .base import WbScreen

HELP = """# workbench

Curate what AI agents know: versioned, scoped, owned fragments.

| key | action | binding id |
|---|---|---|
{keys}

**Command palette** (`ctrl+p`): every action above, plus *Rebuild index* and *Ingest folder*.

**Screens**
- **Browse** (`b`): the scope tree (org → repo → persona, with counts) and the fragment table;
  filter by owner, kind, stale. `enter` opens a fragment.
- **Search** (`/`): hybrid results as you type, with score breakdown and scope; `f2` toggles the explain pane.
- **Fragment**: rendered markdown, metadata, links in and out, authority, history;
  `a`/`d` mark two versions to diff, `R` reverts to the highlighted version, `e` edits, `v` verifies.
- **Edit**: markdown editor; a reason is required; `ctrl+s` saves a new version. If someone saved meanwhile, a
  conflict dialog shows the diff: `r` reload the latest (your text kept beside it), `k` keep yours over the latest,
  `esc` back to editing; `esc` with unsaved changes asks before discarding.
- **Pins** (`p`): the scopes you lead; pin by id, `u` unpins.
- **Anti-pattern** (`n`): don't / why / instead.
- **Inbox** (`i`): your stale fragments: `v` verify, `z` snooze, `e` edit.
- **Export** (`x`): choose a scope and a format, preview, write.
"""


class HelpScreen(WbScreen):
    BINDINGS = [Binding("escape", "back", "Back", id="help-back")]

    def body(self) -> ComposeResult:
        with VerticalScroll():
            keys = "\n".join(f"| `{b.key}` | {b.description} | `{b.id}` |" for b in self.app.BINDINGS)
            yield Markdown(HELP.format(keys=keys))

    def action_back(self) -> None:
        self.app.pop_screen()
