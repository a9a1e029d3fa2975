"""The archived fragments that still supersede: one generation's ``Retired`` set, beside its index.

Archiving ADR-0007, which supersedes ADR-0003, must not bring ADR-0003 back into answers without
a word: for a caller who sees the archived ADR-0007, ADR-0003 stays superseded, labelled
"superseded by ADR-0007@vN (archived)" (rank/supersession.py ``with_retired``). Bringing it back is
an explicit change: remove it from ADR-0007's ``supersedes``. Read from the store's index columns
once per generation (build.py); holds arrays only, no fragment bodies.
"""

from __future__ import annotations

import numpy as np

from ..models import Principal, Scope


class Retired:
    """The archived fragments that list active ones in ``supersedes``: what they replaced stays
    superseded for a caller who sees them (rank/supersession.py ``with_retired``)."""

    def __init__(self, ids: list[str], versions: np.ndarray, updated_s: np.ndarray,
                 keys: list[tuple[Scope, str]], new: np.ndarray, old: np.ndarray):
        self.ids, self.versions, self.updated_s, self.keys = ids, versions, updated_s, keys
        self.new, self.old = new, old      # edges: retired index -> superseded position

    @classmethod
    def empty(cls) -> Retired:
        none = np.zeros(0, dtype=np.int64)
        return cls([], none, np.zeros(0), [], none, none)

    @classmethod
    def of(cls, columns: dict[str, np.ndarray], pos: dict[str, int]) -> Retired:
        """From the archived fragments' index columns (``Store.index_columns(status="archived")``):
        only those superseding an active fragment are kept."""
        columns = {name: list(values.tolist()) for name, values in columns.items()}   # masked NULLs: None
        columns["supersedes"] = [tuple(olds) if olds is not None else () for olds in columns["supersedes"]]
        keep = [i for i, olds in enumerate(columns["supersedes"]) if any(o in pos for o in olds)]
        if not keep:
            return cls.empty()
        ids = [columns["id"][i] for i in keep]
        new, old = [], []
        for j, i in enumerate(keep):
            for target in dict.fromkeys(columns["supersedes"][i]):
                if target in pos and target != columns["id"][i]:
                    new.append(j)
                    old.append(pos[target])
        keys = [(Scope(columns["org"][i], columns["repo"][i], columns["persona"][i], columns["session"][i]),
                 columns["owner"][i]) for i in keep]
        return cls(ids, np.asarray([int(columns["version"][i]) for i in keep], dtype=np.int64),
                   np.asarray([int(columns["updated"][i]) for i in keep], dtype=np.float64) / 1e6, keys,
                   np.asarray(new, dtype=np.int64), np.asarray(old, dtype=np.int64))

    def seen(self, principal: Principal) -> np.ndarray:
        """Which of them ``principal`` may see (as it sees an active fragment: its scope and owner)."""
        return np.array([principal.can_see(scope, owner=owner) for scope, owner in self.keys], dtype=bool)
