"""``RemoteWorkbench``: the ``Workbench`` facade over a running team server, for a face in
another process (the TUI) that cannot open the workspace while the server holds it.

Every method the server's ``rpc`` allows is a real call (``POST /api/v1/rpc/METHOD``, values in
``codec``'s JSON) that returns the same typed values the core does and raises the same errors:
a core error comes back as its ``workbench.errors`` class with its message and ``param``; a
failure to reach the server, or a refused token, as a one-line ``UserError``. Who acts is the
server's decision (``rpc``): a non-admin token always acts as its own principal.

``where()`` names the server; ``ping()`` asks whether it answers, and follows it to the address the
launcher's ``locate`` finds when it restarted elsewhere (the TUI shows both in its header). A call
that cannot reach the server fails at once (never retried, never queued).

What a local facade does for its own process is done here without the server: ``config`` and
``principals()`` are fetched once; the index is the server's, always warm (``index.model_loaded()``
is True, ``index.load_model()``, ``release()`` and ``close()`` do nothing, ``search_index()`` is an
empty stand-in, ``quick_lexical()`` names the backend the server keeps built, and ``warm()`` reports
the fragments counted for the token without rebuilding anything). ``progress=`` callbacks are not sent.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import Any

from ..errors import UserError, WorkbenchError
from . import codec
from .methods import CONFIG, METHODS

TIMEOUT_S = float(os.environ.get("WORKBENCH_CLIENT_TIMEOUT", "600"))
PING_TIMEOUT_S = 2.0   # how long ``ping`` waits for the server's /healthz
LOCAL = {"principal", "principals", "quick_lexical"}   # methods defined below, not generated


class RemoteWorkbench:
    """The core API of the workspace a team server at ``url`` holds, as the bearer ``token``'s
    principal. ``source`` says where the address came from (for error messages). ``locate``, when
    given, says where the server is now, as ``(url, token)`` or None (the launcher reads the
    server's advert again): ``ping`` follows a server that restarted at another address.

    ``reachable`` is whether the last request reached the server (a refused token or a core error
    did reach it); a request that cannot reach it is never retried or queued: it fails, and the
    face says so."""

    def __init__(self, url: str, token: str | None = None, *, source: str = "WORKBENCH_URL",
                 timeout: float = TIMEOUT_S, locate: Callable[[], tuple[str, str | None] | None] | None = None):
        self.url, self.token, self.source, self.timeout = url.rstrip("/"), token, source, timeout
        self.locate = locate
        self.reachable = True
        self.index = _ServerIndex()
        self._config = None
        self._principals: list | None = None
        self._named: dict[str | None, Any] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<RemoteWorkbench {self.url}>"

    def __enter__(self) -> "RemoteWorkbench":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the call --------------------------------------------------------------------------

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``method(*args, **kwargs)`` on the server; its result, or its error raised here."""
        kwargs.pop("progress", None)  # a callback cannot cross the wire
        body = {"args": codec.encode([_named(a) for a in args]),
                "kwargs": codec.encode({k: _named(v) for k, v in kwargs.items()}), "cwd": _cwd()}
        return codec.decode(self._post(f"/api/v1/rpc/{method}", body)["result"])

    def _post(self, path: str, body: Any) -> dict:
        import urllib.error
        import urllib.request

        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.url + path, data=json.dumps(body).encode("utf-8"), headers=headers,
                                         method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            self.reachable = True
            raise self._failure(e) from e
        except (urllib.error.URLError, OSError, ValueError) as e:
            self.reachable = False
            reason = getattr(e, "reason", e)
            raise UserError(f"cannot reach the workbench server at {self.url} ({reason}; named by "
                            f"{self.source})") from e
        self.reachable = True
        if not isinstance(answer, dict) or "result" not in answer:
            raise UserError(f"the workbench server at {self.url} answered without a result")
        return answer

    def _failure(self, e) -> WorkbenchError:
        try:
            detail = json.loads(e.read().decode("utf-8"))
        except (ValueError, OSError):
            detail = None
        error = detail.get("error") if isinstance(detail, dict) else None
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return rebuild(error)
        hint = " (set WORKBENCH_TOKEN to a token from `workbench token create`)" if e.code == 401 else ""
        return UserError(f"server at {self.url}: {error if isinstance(error, str) else e.reason} "
                         f"(HTTP {e.code}){hint}")

    # -- the connection --------------------------------------------------------------------------

    def where(self) -> str:
        """Where this facade's workspace is, for a face to show: ``server <url>``."""
        return f"server {self.url}"

    def ping(self) -> bool:
        """Whether the server answers now (its /healthz, no token needed): at this address, else at
        the one ``locate`` names now (then this facade moves there, with its token). Sets and
        returns ``reachable``; never raises."""
        if _healthy(self.url):
            self.reachable = True
            return True
        try:
            found = self.locate() if self.locate is not None else None
        except Exception:  # noqa: BLE001 - a probe never fails: the server is just not found
            found = None
        if found is not None:
            url, token = found[0].rstrip("/"), found[1]
            if url != self.url and _healthy(url):
                self.url, self.token = url, token or self.token
                self.reachable = True
                return True
        self.reachable = False
        return False

    # -- what a local facade does for its own process ---------------------------------------

    @property
    def config(self):
        with self._lock:
            if self._config is None:
                self._config = self.call(CONFIG)
            return self._config

    def principals(self) -> list:
        with self._lock:
            if self._principals is None:
                self._principals = self.call("principals")
            return list(self._principals)

    def principal(self, name: Any = None):
        """Who acts when this client names ``name`` (None: $WORKBENCH_PRINCIPAL, else the token's own
        principal, or for the server's owner the workspace default). The server decides: a
        non-admin token gets its own principal whatever the name."""
        name = getattr(name, "name", name) or os.environ.get("WORKBENCH_PRINCIPAL") or None
        with self._lock:
            if name not in self._named:
                self._named[name] = self.call("principal", name)
            return self._named[name]

    def quick_lexical(self) -> str:
        return "bm25"  # the server builds it when it starts (and keeps it current)

    def search_index(self, progress: Any = None) -> "_NoIndex":
        return _NoIndex()

    def warm(self, *, progress: Any = None, lexical: str = "bm25") -> dict[str, int]:
        """The server keeps its index warm: nothing rebuilt, nothing embedded here; the fragments
        counted are those this token may be told of (``stats``: the whole workspace's for an admin)."""
        counts = self.call("stats")
        return {"fragments": counts["fragments"], "embedded": 0, "generation": None}

    def release(self) -> None:
        return None

    def release_requested(self) -> bool:
        return False

    def close(self) -> None:
        return None


def _remote(method: str):
    def call(self: RemoteWorkbench, *args: Any, **kwargs: Any) -> Any:
        return self.call(method, *args, **kwargs)
    call.__name__ = call.__qualname__ = method
    call.__doc__ = f"``Workbench.{method}`` on the server (see workbench.service)."
    return call


for _method in sorted(METHODS - LOCAL - {CONFIG}):
    setattr(RemoteWorkbench, _method, _remote(_method))


class _ServerIndex:
    """The index as a client sees it: the server's, loaded and warm."""

    def model_loaded(self) -> bool:
        return True

    def load_model(self) -> None:
        return None


class _NoIndex:
    """Stands in for a local search index a face would build: there is none on this side."""

    ids: tuple = ()

    def lexical(self, backend: str = "bm25") -> None:
        return None


def _healthy(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url + "/healthz", timeout=PING_TIMEOUT_S) as response:
            return response.status == 200
    except (OSError, ValueError):
        return False


def _cwd() -> str | None:
    """This process's folder: the server reads a relative path in a call as relative to it."""
    try:
        return os.getcwd()
    except OSError:
        return None


def _named(value: Any) -> Any:
    """A principal crosses as its name (the server resolves it, and decides who acts)."""
    from ..models import Principal

    return value.name if isinstance(value, Principal) else value


def rebuild(error: dict[str, Any]) -> WorkbenchError:
    """The core error the server answered with: the same class (else the nearest by exit code),
    message and param."""
    from .. import errors

    cls = getattr(errors, str(error.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, WorkbenchError)):
        cls = UserError if error.get("exit_code") == 2 else WorkbenchError
    e = cls.__new__(cls)
    WorkbenchError.__init__(e, error["message"], param=error.get("param"))
    for extra in ("file", "field", "problem"):
        if issubclass(cls, errors.ValidationError):
            setattr(e, extra, error.get(extra))
    return e
