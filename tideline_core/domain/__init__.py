"""The domain's values: the store's records, the validated inputs and their published schemas, scoring, a memory's
text, the default agent and a turn's roles.

Each module is imported by name (`tideline_core.domain.inputs`, ...); this package re-exports
nothing, so what needs only the choices (the CLI's `--help`) loads no pydantic.
"""

__all__ = ["choices", "inputs", "memory_text", "records", "schemas", "scoring"]
