"""The console: a person's window onto an agent's memory, served over HTTP (one more edge over the service).

    python -m tideline_console          # or `tideline console`; `tideline up` serves it beside the rest

`create_app(settings, service=...)` is the Starlette application; `run(settings)` serves it with uvicorn.
"""

from tideline_console.app import create_app, run

__all__ = ["create_app", "run"]
