"""The use-case layer: everything an agent, an operator or a worker does, as methods of one `Service`.

Every edge (MCP tools, the CLI, worker tasks, runtime hooks) parses its input, calls one method
here and formats the result; no edge re-implements a flow. The service works over the store, the
hybrid searcher and a `JobQueue` (derived work goes there after a write commits). Build it with
`tideline_core.compose.compose(settings, jobs=...)`.

    MemoryOps     write, record, amend, recall, search, timeline          (service/memory.py)
    KnowledgeOps  profiles, self-concept, threads, snapshots               (service/knowledge.py)
    OrganizeOps   graph, topics, soft clusters, heatmap, trigger, status   (service/organize.py)
    PipelineOps   embed, log attention, import, reconcile                  (service/pipeline.py)
    ImportOps     import past sessions from runtimes' files                (service/importing.py)
    DreamOps      run a stage or the dream, its log, a run's diff, undo    (service/dream.py)
    InjectOps     the session-start and per-turn blocks                    (service/inject.py)
    BrowseOps     a person's listing of memories, one memory whole, sessions (service/browse.py)
    EditOps       a person's new version, supersession, restore: undoable  (service/edit.py)

`results` holds what most operations return, imported by name: this package does not re-export it.
Every process builds this one `Service`, a hook answering a single prompt included; so an operation
imports what only it needs (the dream's runner and stores, the importers, the heatmap, its result
type) where it runs.
"""

from tideline_core.service.browse import BrowseOps, MemoryFilter, MemoryPage, MemoryView, SessionView
from tideline_core.service.dream import DreamOps, DreamRunView, Triggered, UndoReport, change_dict
from tideline_core.service.edit import EditOps, EditOutcome
from tideline_core.service.importing import ImportObserver, ImportOps, SessionsImported
from tideline_core.service.inject import InjectOps
from tideline_core.service.jobs import JobQueue, NullJobQueue, TaskResult
from tideline_core.service.knowledge import KnowledgeOps
from tideline_core.service.memory import MemoryOps
from tideline_core.service.organize import OrganizeOps
from tideline_core.service.pipeline import ImportReport, PipelineOps, ReconcileReport


class Service(MemoryOps, KnowledgeOps, OrganizeOps, PipelineOps, ImportOps, DreamOps, InjectOps, BrowseOps, EditOps):
    """One object for every operation (see the module docstring for where each lives)."""


__all__ = [
    "BrowseOps",
    "DreamOps",
    "DreamRunView",
    "EditOps",
    "EditOutcome",
    "ImportObserver",
    "ImportOps",
    "ImportReport",
    "JobQueue",
    "MemoryFilter",
    "MemoryPage",
    "MemoryView",
    "NullJobQueue",
    "ReconcileReport",
    "Service",
    "SessionView",
    "SessionsImported",
    "TaskResult",
    "Triggered",
    "UndoReport",
    "change_dict",
]
