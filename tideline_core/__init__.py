"""Tideline's domain library: schema, store, search, scoring, clustering, injection, embedders.

Imports no Celery and no MCP; the worker and server packages build on it.
"""
