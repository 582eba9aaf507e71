"""The beat schedule: every periodic task in one place, each with why it runs and when it expires."""

from __future__ import annotations

from typing import Any

from tideline_core.settings import Settings
from workers.queues import TaskName


def beat_schedule(settings: Settings) -> dict[str, dict[str, Any]]:
    interval = settings.reconcile_interval_seconds
    return {
        # The outbox sweep (DESIGN §3): a write whose enqueue failed (broker down) or whose task was
        # lost is still pending in the database; re-enqueue its embedding once it is past the grace
        # period. Expires after one interval: a late sweep is pointless when the next one is due.
        "reconcile-pending-embeddings": {
            "task": str(TaskName.RECONCILE),
            "schedule": float(interval),
            "options": {"expires": float(interval)},
        },
    }
