"""``Workbench``: the one entry point that the CLI, TUI, MCP server and notebooks call.

A small facade: it opens a workspace (config + database + its ``IndexManager``) and composes
the service's features, each in its own module and each told in its constructor what it needs:

    fragments   Fragments   read and write fragments: list, get, history, diff, edit, archive
    ingestion   Ingestion   fragment files and git repositories
    retrieval   Retrieval   search, context, fetch, traces
    evaluation  Evaluation  golden set and BEIR
    checks      Checks      knowledge CI: the golden set against its baseline
    calibrating Calibrating confidence and the abstention floor fitted on the golden set, or the prior
    impact      Impact      edit impact: the golden queries an edit would change
    curation    Curation    pins, graph, dedupe, merge, anti-patterns
    staleness   Staleness   stale, nudge, verify, snooze
    usage_feature  Usage    usage: what agents received, from traces; fragments never served
    gaps_feature   Gaps     gaps: questions agents asked that got nothing useful, grouped
    exports     Exports     fragment files, sets, bundles, agent context files
    tokens      Tokens      API tokens: create, list, revoke, authenticate
    traces      Traces      trace retention, purges, the caller's latest trace
    proposing   Proposals   agent proposals: propose, the review queue, accept, reject
    publishing  Publishing  published contexts and subscriptions: publish, subscribe, their views
    contexts    ContextExports  a published context as a bundle (agent files: exports, ``context=``)
    models      Models      embedding models: add, shadow, compare, promote, rollback (models.py)

Every public method below is one of theirs, named in the table at the end of the class. The
facade never renders output and never parses command lines; rules are decided in the features
and in policy.py.
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

from .. import policy
from ..config import CONFIG_NAME, DB_NAME, DEFAULT_CONFIG, WorkspaceConfig, resolve_workspace
from ..errors import UserError, WorkspaceMissing
from ..models import Principal
from ..retrieval.embedder import Embedder
from ..retrieval.manager import IndexManager
from ..store import Store, open_store
from .archives import Archives
from .calibrating import Calibrating
from .tuning import Tuning
from .check import Checks
from .complete import Completion
from .curation import Curation
from .evaluation import Evaluation, copy_golden, golden_to_copy
from .exports import Exports
from .fragments import Fragments
from .gaps import Gaps
from .impact import Impact
from .ingest import Ingestion
from .models import Models
from .search import Retrieval
from .staleness import Staleness
from .proposals import Proposals
from .publishing import Publishing
from .context_export import ContextExports
from . import upkeep
from .tokens import Tokens
from .traces import Traces
from .usage import Usage
from .workspace import Workspace


REFRESH_WAIT_S = 5.0  # a write's answer waits this long at most for the index that shows it


def _via(feature: str, method):
    """A facade method that calls ``method`` on the named feature (same signature and help)."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        return method(getattr(self, feature), *args, **kwargs)
    return call


class Workbench:
    """An open workspace. Use ``Workbench.open(path)``; close it (or use ``with``) when done."""

    def __init__(self, root: Path, config: WorkspaceConfig, store: Store):
        self.ws = Workspace(root, config, store, IndexManager(store, Embedder(config.embedder)))
        self.fragments = Fragments(self.ws)
        self.retrieval = Retrieval(self.ws, self.fragments)
        self.evaluation = Evaluation(self.ws, self.retrieval)
        self.calibrating = Calibrating(self.ws, self.retrieval, self.evaluation)
        self.checks = Checks(self.ws, self.evaluation, self.calibrating)
        self.tuning = Tuning(self.ws, self.retrieval, self.evaluation)
        self.impact = Impact(self.ws, self.fragments, self.retrieval, self.evaluation)
        self.curation = Curation(self.ws, self.fragments, self.retrieval)
        self.ingestion = Ingestion(self.ws, self.curation)
        self.usage_feature = Usage(self.ws)
        self.proposing = Proposals(self.ws, self.fragments)
        self.gaps_feature = Gaps(self.ws, self.retrieval, self.proposing)
        self.archives = Archives(self.ws, self.fragments)
        self.staleness = Staleness(self.ws, self.fragments, self.usage_feature, self.gaps_feature, self.proposing)
        self.staleness.archives = self.archives   # nudge, the periodic scan, also compresses (archives.py)
        self.exports = Exports(self.ws, self.fragments, self.retrieval)
        self.publishing = Publishing(self.ws, self.exports)
        self.contexts = ContextExports(self.ws)
        self.tokens = Tokens(self.ws)
        self.traces = Traces(self.ws)
        self.completion = Completion(self.ws)
        self.models = Models(self.ws, self.retrieval)

    @property
    def root(self) -> Path:
        return self.ws.root

    @property
    def config(self) -> WorkspaceConfig:
        return self.ws.config

    @property
    def store(self) -> Store:
        return self.ws.store

    @property
    def index(self) -> IndexManager:
        """The workspace's IndexManager: the owner of every piece of derived search data."""
        return self.ws.index

    @property
    def embedder(self):
        return self.ws.index.embedder

    # -- lifecycle --------------------------------------------------------------------

    @classmethod
    def init(cls, path: str | Path | None = None, *, config: str | Path | None = None,
             force: bool = False, store: str | None = None) -> "Workbench":
        """Create a workspace at ``path`` (default: the resolved location) and open it. A folder
        made here is this user's alone (0700; the store keeps its files 0600). ``store``: a
        PostgreSQL URL to keep the workspace's data in (written to its workbench.yaml as ``store:``)
        instead of the folder's DuckDB file."""
        if store is not None:
            from ..config import check_store

            check_store(store, file="--store")
        root = resolve_workspace(path)
        made = not root.exists()
        target = root / CONFIG_NAME
        if target.exists() and not force and config is not None:
            raise UserError(f"{target} already exists (use --force to replace it)")
        if config is not None:
            source = Path(config)
            loaded = WorkspaceConfig.load(source)  # validate before copying anything
            golden = golden_to_copy(source, loaded)
            root.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            if golden is not None:
                copy_golden(golden, root, target)
        elif not target.exists():
            root.mkdir(parents=True, exist_ok=True)
            target.write_text(DEFAULT_CONFIG, encoding="utf-8")
        if store is not None:
            upkeep.set_store(target, store)
        if made and root.is_dir():
            root.chmod(0o700)  # (an existing folder keeps the modes its owner gave it)
        return cls.open(root)

    @classmethod
    def open(cls, path: str | Path | None = None, *, lock_timeout: float | None = None,
             read_only: bool | None = None) -> "Workbench":
        """Open the workspace at ``path``. ``read_only=True``: never write (nor upgrade) it, e.g. for
        shell completion; None: read-write when the files allow it."""
        root = resolve_workspace(path)
        if not (root / CONFIG_NAME).is_file():
            raise WorkspaceMissing(f"no workspace at {root} (run `workbench init` first, "
                                   "or pass --workspace DIR / set WORKBENCH_HOME)")
        config = WorkspaceConfig.load(root / CONFIG_NAME)
        return cls(root, config, open_store(config.store or root / DB_NAME, root, lock_timeout=lock_timeout,
                                            read_only=read_only))

    @staticmethod
    def connect(url: str, token: str | None = None):
        """The same methods, types and errors over a team server at ``url``, as ``token``'s principal
        (default ``$WORKBENCH_TOKEN``): each call goes to the server (``remote.RemoteWorkbench``).
        For notebooks and scripts where the workspace is served, or lives in PostgreSQL behind replicas."""
        import os

        from ..remote.client import RemoteWorkbench

        return RemoteWorkbench(url, token or os.environ.get("WORKBENCH_TOKEN"), source="Workbench.connect")

    def close(self) -> None:
        self.ws.index.settle(stop=True)  # an index build behind stops: a cache, not a write
        self.store.close()

    def release(self) -> None:
        """Release the workspace lock until the next call (for long-running faces: MCP, TUI)."""
        self.store.release()
        self.tokens.forget_tokens()  # another process may change them while the file is not held

    def share(self) -> None:
        """Serve many threads at once, for the team server: each thread reads through its own
        cursor and writes go one at a time. The workspace must be writable."""
        self.store.require_writable("serve it")
        self.store.share()
        self.store.follow(self._changed_elsewhere)

    def _changed_elsewhere(self, kinds: set[str]) -> None:
        """What another process (a replica) wrote, read from the change log: the index is rebuilt
        behind the readers; tokens are read again at the next check."""
        if "tokens" in kinds:
            self.tokens.forget_tokens()
        if "generation" in kinds:
            self.ws.index.refresh_behind()

    @property
    def serves_replicas(self) -> bool:
        """Whether several server processes may serve this workspace at once (its store is shared
        by processes: PostgreSQL), each following the others' writes."""
        return self.store.replicas

    def checkpoint_if_due(self) -> bool:
        """Shared mode (the team server): checkpoint now if the write-ahead log is over 4 MB."""
        return self.store.checkpoint_if_due(idle=True)

    def warm_writes(self) -> None:
        """Load what the first write needs (the secret guard's rules, ~1 s), so a server's first
        edit does not pay for it."""
        from ..ingest.secrets import scan

        scan("warm-up")

    def refresh_index(self) -> None:
        """After a request that wrote (in the team server): build the index of the current
        generation now, so the writer's next read sees its write and other readers never wait
        for a build. Nothing when this thread wrote nothing since it last called this."""
        if self.store.take_bumps():
            self.ws.index.refresh(wait=REFRESH_WAIT_S)

    def release_requested(self) -> bool:
        """Whether another process is waiting for the workspace this one holds."""
        return self.store.release_requested()

    # -- keeping the workspace (service/upkeep.py) ---------------------------------------

    def identity(self):
        """This workspace's identity (``workbench.identity.Identity``: its id and where its data lives)."""
        return self.store.identity()

    def schema_status(self):
        """What ``migrate`` would apply to this open workspace (nothing, once it is open for writing)."""
        return self.store.schema_status()

    def backup(self, out: str | Path, *, force: bool = False, actor: str | Principal | None = None):
        """Write a consistent backup of the whole workspace to ``out`` (admins and the local administrator)."""
        return upkeep.backup(self.ws, out, force=force, actor=actor)

    def migrate_to(self, target: str, *, actor: str | Principal | None = None) -> dict:
        """Move this workspace's data to a PostgreSQL URL (its workbench.yaml then names it), or copy
        it into a new DuckDB workspace folder; verified table by table, embeddings included."""
        return upkeep.migrate_to(self.ws, target, actor=actor)

    def reload_config(self) -> dict:
        """Read workbench.yaml again (the team server on SIGHUP); a bad file raises and changes nothing."""
        return upkeep.reload_config(self.ws)

    schema_at = staticmethod(upkeep.schema_status)      # Workbench.schema_at(path): without opening it
    migrate = staticmethod(upkeep.migrate)              # Workbench.migrate(path): a backup, then the upgrade
    restore_backup = staticmethod(upkeep.restore_backup)

    def __enter__(self) -> "Workbench":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Workbench {self.root} {self.store.counts()['fragments']} fragments>"

    # -- principals -------------------------------------------------------------------

    def principal(self, name: str | Principal | None = None) -> Principal:
        return self.ws.principal(name)

    def principals(self) -> list[Principal]:
        return sorted(self.config.principals.values(), key=lambda p: p.name)

    def actions(self, principal: str | Principal | None = None) -> frozenset[str]:
        """The write actions (policy names: edit, pin, review, ...) ``principal`` may take somewhere,
        by its kind and write grants: what a face offers it. Each is still decided on its target."""
        return policy.offered(self.principal(principal))

    # -- the features' public methods ----------------------------------------------------

    list = _via("fragments", Fragments.list)
    browse = _via("fragments", Fragments.browse)
    get = _via("fragments", Fragments.get)
    history = _via("fragments", Fragments.history)
    received_via = _via("fragments", Fragments.received_via)
    received = _via("fragments", Fragments.received)
    diff = _via("fragments", Fragments.diff)
    stats = _via("fragments", Fragments.stats)
    edit = _via("fragments", Fragments.edit)
    revert = _via("fragments", Fragments.revert)
    set_status = _via("fragments", Fragments.set_status)
    archive = _via("fragments", Fragments.archive)
    restore = _via("fragments", Fragments.restore)
    compress_archives = _via("archives", Archives.compress)

    ingest = _via("ingestion", Ingestion.ingest)
    ingest_git = _via("ingestion", Ingestion.ingest_git)

    settings = _via("retrieval", Retrieval.settings)
    search_index = _via("retrieval", Retrieval.search_index)
    warm = _via("retrieval", Retrieval.warm)
    quick_lexical = _via("retrieval", Retrieval.quick_lexical)
    applicable_pins = _via("retrieval", Retrieval.applicable_pins)
    search = _via("retrieval", Retrieval.search)
    context = _via("retrieval", Retrieval.context)
    confidence_floor = _via("retrieval", Retrieval.confidence_floor)
    supersessions = _via("retrieval", Retrieval.supersessions)
    superseded_by = _via("retrieval", Retrieval.superseded_by)
    replaced_by = _via("retrieval", Retrieval.replaced_by)
    fetch = _via("retrieval", Retrieval.fetch)
    record_get = _via("retrieval", Retrieval.record_get)
    trace = _via("retrieval", Retrieval.trace)
    last_trace_id = _via("traces", Traces.last_trace_id)
    purge_traces = _via("traces", Traces.purge_traces)
    health = _via("retrieval", Retrieval.health)

    eval_golden = _via("evaluation", Evaluation.eval_golden)
    golden_path = _via("evaluation", Evaluation.golden_path)
    eval_beir = staticmethod(Evaluation.eval_beir)
    check = _via("checks", Checks.check)
    calibrate = _via("calibrating", Calibrating.calibrate)
    tune = _via("tuning", Tuning.tune)
    calibration = _via("calibrating", Calibrating.calibration)
    calibration_info = _via("calibrating", Calibrating.calibration_info)
    edit_impact = _via("impact", Impact.edit_impact)
    edit_with_impact = _via("impact", Impact.edit_with_impact)

    pin = _via("curation", Curation.pin)
    unpin = _via("curation", Curation.unpin)
    pins = _via("curation", Curation.pins)
    graph = _via("curation", Curation.graph)
    graph_node = _via("curation", Curation.graph_node)
    dedupe = _via("curation", Curation.dedupe)
    merge = _via("curation", Curation.merge)
    add_antipattern = _via("curation", Curation.add_antipattern)
    add_fragment = _via("curation", Curation.add_fragment)

    stale = _via("staleness", Staleness.stale)
    nudge = _via("staleness", Staleness.nudge)
    verify = _via("staleness", Staleness.verify)
    snooze = _via("staleness", Staleness.snooze)

    usage = _via("usage_feature", Usage.usage)
    fragment_usage = _via("usage_feature", Usage.fragment_usage)
    gaps = _via("gaps_feature", Gaps.gaps)
    draft_gap = _via("gaps_feature", Gaps.draft_gap)

    export_files = _via("exports", Exports.export_files)
    preview_files = _via("exports", Exports.preview_files)
    set_create = _via("exports", Exports.set_create)
    set_change = _via("exports", Exports.set_change)
    set_fragments = _via("exports", Exports.set_fragments)
    set_show = _via("exports", Exports.set_show)
    export_bundle = _via("exports", Exports.export_bundle)
    import_bundle = _via("exports", Exports.import_bundle)
    agent_selection = _via("exports", Exports.agent_selection)
    render_agents = _via("exports", Exports.render_agents)
    export_agents = _via("exports", Exports.export_agents)

    token_create = _via("tokens", Tokens.token_create)
    token_list = _via("tokens", Tokens.token_list)
    token_revoke = _via("tokens", Tokens.token_revoke)
    authenticate = _via("tokens", Tokens.authenticate)
    identify = _via("tokens", Tokens.identify)
    record_token_use = _via("tokens", Tokens.record_use)
    load_tokens = _via("tokens", Tokens.load_tokens)

    propose = _via("proposing", Proposals.propose)
    proposals = _via("proposing", Proposals.proposals)
    accept = _via("proposing", Proposals.accept)
    reject = _via("proposing", Proposals.reject)

    publish = _via("publishing", Publishing.publish)
    unpublish = _via("publishing", Publishing.unpublish)
    published = _via("publishing", Publishing.published)
    published_context = _via("publishing", Publishing.describe)
    subscribe = _via("publishing", Publishing.subscribe)
    unsubscribe = _via("publishing", Publishing.unsubscribe)
    move_subscription = _via("publishing", Publishing.move_subscription)
    subscriptions = _via("publishing", Publishing.subscriptions)
    context_fragments = _via("contexts", ContextExports.context_fragments)
    export_context_bundle = _via("contexts", ContextExports.export_context_bundle)

    model_list = _via("models", Models.model_list)
    model_add = _via("models", Models.model_add)
    model_shadow = _via("models", Models.model_shadow)
    model_promote = _via("models", Models.model_promote)
    model_rollback = _via("models", Models.model_rollback)
    model_expire = _via("models", Models.expire)
    compare_models = _via("models", Models.compare_golden)
    compare_models_beir = _via("models", Models.compare_beir)
    build_int8 = staticmethod(Models.build_int8)

    complete_ids = _via("completion", Completion.fragment_ids)
    complete_scopes = _via("completion", Completion.scopes)

