"""Search filters: kind, tag, owner and ``updated_since``, checked once and applied as a mask.

Filters narrow the *candidates* (what is ranked, before the top-k cut, like the scope mask),
never the corpus statistics: BM25's N, df, idf and average length, the rare-identifier switch,
PageRank and supersession stay over what the caller can see (in the working scope). So a
filtered search scores each fragment from the same evidence as the unfiltered one, a narrow
filter does not make idf degenerate, and nothing outside the caller's view enters either way.
Each criterion accepts one value or a list (any of them matches); criteria combine with "and".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Iterable

from ..errors import UserError
from ..models import KINDS


@dataclass(frozen=True)
class Filters:
    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()
    updated_since: date | None = None

    def __bool__(self) -> bool:
        return bool(self.kinds or self.tags or self.owners or self.updated_since)

    def since_seconds(self) -> float | None:
        if self.updated_since is None:
            return None
        return (datetime(self.updated_since.year, self.updated_since.month, self.updated_since.day)
                - datetime(1970, 1, 1)).total_seconds()

    def mask(self, index):
        """The fragments of ``index`` that pass (a boolean array over its positions)."""
        return index.filter_mask(self.kinds, self.tags, self.owners, self.since_seconds())

    def to_dict(self) -> dict[str, Any] | None:
        if not self:
            return None
        return {"kind": list(self.kinds) or None, "tag": list(self.tags) or None, "owner": list(self.owners) or None,
                "updated_since": self.updated_since.isoformat() if self.updated_since else None}


def _values(name: str, value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    try:
        items = list(items)
    except TypeError:
        raise UserError(f"--{name} must be a name or a list of names, not {value!r}") from None
    out = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise UserError(f"--{name} must be a non-empty name, not {item!r}")
        out.append(item.strip())
    return tuple(dict.fromkeys(out))


def parse_date(value: date | str | None, param: str = "updated_since") -> date | None:
    if value is None or (isinstance(value, date) and not isinstance(value, datetime)):
        return value
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise UserError(f"the date must be written YYYY-MM-DD, not {value!r}", param=param)


def make_filters(*, kind=None, tag=None, owner=None, updated_since=None,
                 principals: Iterable[str] = ()) -> Filters:
    """Check and normalise filter values: kinds must be known kinds, owners known principals,
    tags are matched lower-case (as fragment files spell them), ``updated_since`` a date."""
    kinds = _values("kind", kind)
    for k in kinds:
        if k not in KINDS:
            raise UserError(f"unknown kind {k!r} (valid: {', '.join(KINDS)})")
    owners = _values("owner", owner)
    known = set(principals)
    for o in owners:
        if o not in known:
            raise UserError(f"unknown owner {o!r} (known: {', '.join(sorted(known))})")
    tags = tuple(t.lower() for t in _values("tag", tag))
    return Filters(kinds=kinds, tags=tags, owners=owners, updated_since=parse_date(updated_since))
