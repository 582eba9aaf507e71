"""Thin Celery tasks: each takes ids, opens the worker's resources and calls one tideline_core function."""

__all__ = ["dream", "ingest"]
