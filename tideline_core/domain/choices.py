"""The default agent and the roles of a turn: plain values, importable without pydantic.

Every other closed set of values (narrative types, search modes, ...) is declared once, as a
`Literal` of the input model that checks it (`domain.inputs`), and published from there.
"""

from typing import Literal, get_args

# The agent every entry point acts as unless told otherwise (stdio, HTTP without tokens, hooks, import,
# the provider): one user's tools share one memory.
DEFAULT_AGENT = "default"

TurnRole = Literal["user", "assistant", "system", "tool"]
TURN_ROLES: tuple[str, ...] = get_args(TurnRole)
