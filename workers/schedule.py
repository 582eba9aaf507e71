"""The beat schedule: every periodic task in one place, each with why it runs and when it expires."""

from __future__ import annotations

from typing import Any

from celery.schedules import crontab

from tideline_core.settings import Settings
from workers.queues import TaskName

NIGHTLY_EXPIRES_SECONDS = 6 * 3600
AGENT_INDEXES_SECONDS = 600.0


def beat_schedule(settings: Settings) -> dict[str, dict[str, Any]]:
    interval = settings.reconcile_interval_seconds
    hour, minute = (int(part) for part in settings.dream_at.split(":"))
    return {
        # The outbox sweep: a write whose enqueue failed (broker down) or whose task was
        # lost is still pending in the database; re-enqueue its embedding once it is past the grace
        # period. Expires after one interval: a late sweep is pointless when the next one is due.
        "reconcile-pending-embeddings": {
            "task": str(TaskName.RECONCILE),
            "schedule": float(interval),
            "options": {"expires": float(interval)},
        },
        # The nightly dream: one fan-out task starts a chain per agent with narratives, at
        # TIDELINE_DREAM_AT in TIDELINE_DREAM_TIMEZONE (the app's time zone) when agents are quiet.
        # Expires after six hours: a fan-out still
        # queued by then would dream into the working day, and tomorrow's run covers everything
        # (every stage works over the agent's whole state, so a skipped night loses nothing).
        "nightly-dream": {
            "task": str(TaskName.NIGHTLY_ALL),
            "schedule": crontab(minute=minute, hour=hour),
            "options": {"expires": float(NIGHTLY_EXPIRES_SECONDS)},
        },
        # PostgreSQL: an agent whose view has grown to `agent_indexes.OWN_ROWS` rows gets a vector graph and a
        # keyword index of its own (until then its searches read its rows, slower as they grow). A quick check
        # when nothing is due; expires after one interval, as the next check covers the same.
        "build-agent-indexes": {
            "task": str(TaskName.BUILD_AGENT_INDEXES),
            "schedule": AGENT_INDEXES_SECONDS,
            "options": {"expires": AGENT_INDEXES_SECONDS},
        },
    }
