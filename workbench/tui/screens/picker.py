"""The fragment picker of the Pins screen: a field that lists every fragment matching what is typed.

Typing an id or a title (any case, any part of it) lists every match under the field, as
``id · title`` in the case they are stored, those whose id or title starts with the text first.
``→`` at the end of the field completes to the first match (the id or the title, whichever matched,
as stored); ``↓`` moves into the list, where ``enter`` picks a fragment (its id fills the field) and
``esc`` goes back to the field, as does any character typed there. The inline suggestion only shows a completion whose case is the
typed text's, so the field never shows a mix of the user's case and the stored one.

It decides nothing: which fragments may be picked is what the screen loaded from the core.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.binding import Binding
from textual.suggester import SuggestFromList
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ..plain import Input, plain_text

SHOWN = 50   # matches listed at most (the list scrolls; typing more narrows it)


@dataclass(frozen=True)
class Match:
    id: str
    title: str
    completion: str   # what → completes to: the id or the title, whichever the text matched, as stored


def matches(typed: str, titles: dict[str, str], limit: int = SHOWN) -> list[Match]:
    """Every fragment of ``titles`` (id → title) whose id or title holds ``typed``, ignoring case:
    those that start with it first (ids before titles), then the rest, each group sorted."""
    needle = typed.strip().casefold()
    if not needle:
        return []
    ranked = []
    for fid, title in titles.items():
        id_at, title_at = fid.casefold().find(needle), title.casefold().find(needle)
        if id_at < 0 and title_at < 0:
            continue
        by_id = id_at == 0 or (id_at > 0 and title_at != 0)
        ranked.append(((0 if 0 in (id_at, title_at) else 1, 0 if by_id else 1, fid if by_id else title.casefold()),
                       Match(fid, title, fid if by_id else title)))
    ranked.sort(key=lambda pair: pair[0])
    return [m for _, m in ranked[:limit]]


class MatchList(OptionList):
    """The matches under the picker; ``esc`` goes back to the field, as does any character typed there."""

    BINDINGS: ClassVar = [Binding("escape", "back_to_field", "Back to the field", id="pin-matches-back", show=False)]

    def action_back_to_field(self) -> None:
        self.screen.query_one(FragmentPicker).focus()

    def on_key(self, event) -> None:
        """A character typed here goes to the field (the list is for choosing, the field for typing)."""
        if event.is_printable and event.character:
            event.stop()
            event.prevent_default()
            picker = self.screen.query_one(FragmentPicker)
            picker.focus()
            picker.insert_text_at_cursor(event.character)

    def show(self, found: list[Match]) -> None:
        self.set_options([Option(plain_text(f"{m.id} · {m.title}"), id=m.id) for m in found])
        self.display = bool(found)
        if found:
            self.highlighted = 0


class FragmentPicker(Input):
    """The field; the screen fills ``titles`` (id → title of every fragment the user may pick)."""

    BINDINGS: ClassVar = [Binding("down", "to_matches", "Matches", id="pin-id-matches", show=False)]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.titles: dict[str, str] = {}

    def set_titles(self, titles: dict[str, str]) -> None:
        self.titles = dict(titles)
        # exact case only: a suggestion is drawn as the typed text plus the rest of it
        self.suggester = SuggestFromList([*sorted(titles), *sorted(set(titles.values()))], case_sensitive=True)

    def found(self) -> list[Match]:
        return matches(self.value, self.titles)

    def action_cursor_right(self, select: bool = False) -> None:
        if not select and self.cursor_at_end and not self._suggestion:
            found = self.found()
            if found and found[0].completion != self.value:
                self.value = found[0].completion
                self.cursor_position = len(self.value)
                return
        super().action_cursor_right(select)

    def action_to_matches(self) -> None:
        listed = self.screen.query_one(MatchList)
        if listed.display and listed.option_count:
            listed.focus()
