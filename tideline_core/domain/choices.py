"""The closed sets of values the inputs accept, and the default agent: plain values, importable without pydantic.

The CLI builds its parser (choices, help) from these without loading the validation models.
"""

# The agent every entry point acts as unless told otherwise (stdio, HTTP without tokens, hooks, import,
# the provider): one user's tools share one memory.
DEFAULT_AGENT = "default"

NARRATIVE_TYPES = ("event", "reflection", "insight", "decision", "dream", "digest", "other")
TURN_ROLES = ("user", "assistant", "system", "tool")
PROFILE_KINDS = ("fact", "impression", "relationship", "self", "contact")
SELF_CONCEPT_KINDS = ("fact", "terrain", "reflection")
THREAD_STATUSES = ("open", "exploring", "resolved", "dropped")
SEARCH_MODES = ("hybrid", "keyword", "dense")
SEARCH_KINDS = ("all", "narratives", "context")
