"""Who is calling: the bearer token of every request, checked by the core, and a brake on guessing.

A token is checked by the core's ``identify``, which holds every token in memory (kept current
as tokens are created and revoked, through any face: a revocation refuses the token on the
next request); the owner token (written for the user who started the server, see ``advert``)
is compared here. The check reads no store and takes no thread, so it runs on the event loop,
and a wrong token costs a hash and a dictionary lookup. A good token's use is recorded at most
once a minute: the caller runs that write (``Checked.record``) on a worker thread.

The brake slows guessing, never a good token: a valid token is accepted before the brake is
looked at, whatever others send from the same address (every local client, and everything
behind a reverse proxy, shares one). Failures are counted per client address and per token id
(the ``wbt_<id>_`` part, when a guess names one): past ``BUDGET`` failures within ``WINDOW_S``
seconds on either count, a further failure is answered 429 (with Retry-After) instead of 401.
A request without any token is a plain 401, never counted. Memory is bounded: at most
``BUDGET`` times per count, and at most ``MAX_TRACKED`` addresses and ids (the oldest forgotten).
"""

from __future__ import annotations

import hmac
import re
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

WINDOW_S, BUDGET = 60.0, 20
MAX_TRACKED = 4096  # addresses and ids remembered (~1 kB each); the least recently failed forgotten first
_ID_PREFIX = re.compile(r"wbt_([0-9a-f]{12})_")


@dataclass(frozen=True)
class Caller:
    principal: str | None   # None: the server's owner, who acts as the local command line does
    admin: bool


class Checked(NamedTuple):
    caller: Caller
    record: Callable[[], None] | None   # the use to record (a store write), when one is due


class Refused(Exception):
    def __init__(self, status: int, message: str, reason: str, retry_after: int | None = None):
        super().__init__(message)
        self.status, self.message, self.reason, self.retry_after = status, message, reason, retry_after


class Gate:
    """``identify(raw)`` is the core's in-memory check (raises ``Unauthenticated``);
    ``record_use(token_id)`` records a use."""

    def __init__(self, identify: Callable[[str], object], record_use: Callable[[str], None], owner_token: str, *,
                 clock: Callable[[], float] = time.monotonic):
        self._identify, self._record_use, self._owner, self._clock = identify, record_use, owner_token, clock
        self._lock = threading.Lock()
        self._by_address: OrderedDict[str, deque] = OrderedDict()
        self._by_id: OrderedDict[str, deque] = OrderedDict()

    def check(self, header: str | None, client: str) -> Checked:
        """The caller for an ``Authorization`` header, or ``Refused`` (401; 429 for a failure
        past the brake)."""
        from ..errors import Unauthenticated

        raw = _bearer(header)
        if raw is None:  # nothing to check and nothing guessed: a plain 401, braked or not
            raise Refused(401, Unauthenticated("missing").message, "missing")
        if hmac.compare_digest(raw.encode("utf-8"), self._owner.encode("utf-8")):
            return Checked(Caller(None, True), None)
        try:
            found = self._identify(raw)
        except Unauthenticated as e:
            raise self._failed(client, raw, e) from e
        principal = found.principal
        record = (lambda token_id=found.token_id: self._record_use(token_id)) if found.use_due else None
        return Checked(Caller(principal.name, bool(getattr(principal, "admin", False))), record)

    def _failed(self, client: str, raw: str, error) -> Refused:
        """Count a failure against the address and the token id it names: 401, or 429 when either
        count is past the budget."""
        now = self._clock()
        matched = _ID_PREFIX.match(raw)
        keys = [(self._by_address, client)] + ([(self._by_id, matched.group(1))] if matched else [])
        retry = 0
        with self._lock:
            for table, key in keys:
                times = table.get(key)
                if times is None:
                    times = table[key] = deque(maxlen=BUDGET)
                    if len(table) > MAX_TRACKED:
                        table.popitem(last=False)
                else:
                    table.move_to_end(key)
                while times and times[0] <= now - WINDOW_S:
                    times.popleft()
                if len(times) >= BUDGET:
                    retry = max(retry, int(times[0] + WINDOW_S - now) + 1)
                times.append(now)
        if retry:
            return Refused(429, "too many failed authentications; try again later", "braked", retry)
        return Refused(401, error.message, getattr(error, "reason", "unknown"))


def _bearer(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return "\x00malformed"  # never a token: fails as malformed, not as missing
    return value.strip()
