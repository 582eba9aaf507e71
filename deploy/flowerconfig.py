"""Flower settings for deployments (`celery flower --conf=deploy/flowerconfig.py`); `tideline flower` sets the same."""

import os

# Loopback only: put a reverse proxy with TLS in front if Flower must be reached from elsewhere.
address = os.environ.get("TIDELINE_FLOWER_ADDRESS", "127.0.0.1")
port = int(os.environ.get("TIDELINE_FLOWER_PORT", "5555"))
# user:password; Flower refuses nothing without it, so set it wherever the port is reachable by others.
basic_auth = [os.environ["TIDELINE_FLOWER_BASIC_AUTH"]] if os.environ.get("TIDELINE_FLOWER_BASIC_AUTH") else []
# The task history lives in Celery events; there is nothing worth persisting to a Flower database.
persistent = False
