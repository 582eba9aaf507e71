"""Celery side of Tideline: the app, queues and routes, thin tasks, pipelines and the beat schedule."""
