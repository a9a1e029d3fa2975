"""Who is calling: the bearer token of every request, checked by the core, and a brake on guessing.

A token is checked by the core's ``authenticate`` (one primary-key lookup and a constant-time hash
comparison); the owner token (written for the user who started the server, see ``advert``) is
compared here. A good token is remembered for ``CACHE_S`` seconds, and forgotten at once when a
token command runs through the server, so a revocation takes effect on the next request.

Failures with a token (a wrong one) are counted per client address: past ``BUDGET`` failures within ``WINDOW_S`` seconds, a
request from that address whose token is not one already known good is refused with 429 before
any lookup, until the window has passed. A caller with a good token is never locked out by
someone else's failures at the same address (every local client shares 127.0.0.1).
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Callable

CACHE_S, WINDOW_S, BUDGET = 5.0, 60.0, 20


@dataclass(frozen=True)
class Caller:
    principal: str | None   # None: the server's owner, who acts as the local command line does
    admin: bool


class Refused(Exception):
    def __init__(self, status: int, message: str, reason: str, retry_after: int | None = None):
        super().__init__(message)
        self.status, self.message, self.reason, self.retry_after = status, message, reason, retry_after


class Gate:
    def __init__(self, authenticate: Callable[[str], object], owner_token: str, *,
                 clock: Callable[[], float] = time.monotonic):
        self._authenticate, self._owner, self._clock = authenticate, owner_token, clock
        self._lock = threading.Lock()
        self._good: dict[str, tuple[Caller, float]] = {}
        self._failures: dict[str, deque] = defaultdict(deque)

    def known(self, header: str | None) -> Caller | None:
        """The caller for a token checked good within ``CACHE_S``, without touching the store
        (the event loop asks this; a miss is checked on a worker thread: ``check``)."""
        raw = _bearer(header)
        if not raw:
            return None
        digest = hashlib.sha256(raw.encode("utf-8")).hexdigest()
        with self._lock:
            found = self._good.get(digest)
            return found[0] if found is not None and found[1] > self._clock() else None

    def check(self, header: str | None, client: str) -> Caller:
        """The caller for an ``Authorization`` header, or ``Refused`` (401, or 429 when braked)."""
        from ..errors import Unauthenticated

        raw = _bearer(header)
        if raw is None:  # nothing to check and nothing guessed: a plain 401, braked or not
            raise Refused(401, Unauthenticated("missing").message, "missing")
        digest = hashlib.sha256(raw.encode("utf-8")).hexdigest() if raw else None
        now = self._clock()
        with self._lock:
            known = self._good.get(digest) if digest else None
            if known is not None and known[1] > now:
                return known[0]
            failures = self._failures[client]
            while failures and failures[0] <= now - WINDOW_S:
                failures.popleft()
            if len(failures) >= BUDGET:
                retry = max(1, int(failures[0] + WINDOW_S - now) + 1)
                raise Refused(429, "too many failed authentications from this address; try again later",
                              "braked", retry)
        try:
            if raw and hmac.compare_digest(raw.encode("utf-8"), self._owner.encode("utf-8")):
                caller = Caller(None, True)
            else:
                principal = self._authenticate(raw)
                caller = Caller(principal.name, bool(getattr(principal, "admin", False)))
        except Unauthenticated as e:
            with self._lock:
                self._failures[client].append(now)
            raise Refused(401, e.message, getattr(e, "reason", "unknown")) from e
        with self._lock:
            self._good[digest] = (caller, now + CACHE_S)
        return caller

    def forget(self) -> None:
        """Forget every token known good (a token was created or revoked)."""
        with self._lock:
            self._good.clear()


def _bearer(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return "\x00malformed"  # never a token: fails as malformed, not as missing
    return value.strip()
