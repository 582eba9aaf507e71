"""Celery side of Tideline: the app, queues and routes, thin tasks, pipelines and the beat schedule."""

__all__ = ["app", "jobqueue", "locks", "pipelines", "queues", "resources", "schedule", "tasks"]
