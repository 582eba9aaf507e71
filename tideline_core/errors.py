"""The one error hierarchy of Tideline; edges translate these, nothing else does.

TidelineError
├── InvalidInput            bad caller input: names the field and the rule; nothing stored
├── NotFound                a referenced row does not exist for this agent
├── Conflict                the operation cannot run now (a lock is held, a stage is running)
├── ConfigurationError      settings that cannot work together
├── LLMOutputInvalid        the LLM's answer broke its schema even after the repair retry; nothing applied
├── BudgetExhausted         the agent's LLM token budget (per run or per day) is spent
└── TransientError          worth retrying later
    ├── EmbedderUnavailable the embedding backend failed or timed out
    ├── BrokerUnavailable   the Celery broker could not take a message
    └── LLMUnavailable      the LLM endpoint failed, timed out or kept answering 429/5xx
"""

from __future__ import annotations


class TidelineError(Exception):
    """Root of every error Tideline raises on purpose."""


class InvalidInput(TidelineError):
    """Caller input broke a rule; `field` and `rule` say which and why."""

    def __init__(self, field: str, rule: str) -> None:
        self.field = field
        self.rule = rule
        super().__init__(f"{field}: {rule}")


class NotFound(TidelineError):
    """A referenced row does not exist (or belongs to another agent)."""


class Conflict(TidelineError):
    """The operation cannot run now; the message says what holds it."""


class ConfigurationError(TidelineError):
    """Settings that cannot work together."""


class MissingExtra(ConfigurationError):
    """An optional package this install lacks: the message names what needs it and the extra that brings it."""

    def __init__(self, package: str, extra: str, needed_for: str, otherwise: str = "") -> None:
        instead = f", or {otherwise}" if otherwise else ""
        super().__init__(
            f"{needed_for} needs {package}, which this install lacks: pip install 'tideline[{extra}]'{instead}"
        )


class LLMOutputInvalid(TidelineError):
    """The LLM's answer was not valid JSON for its schema, even after one repair request."""


class BudgetExhausted(TidelineError):
    """The agent's LLM token budget for this run or this day is spent; the stage stops, nothing half-applied."""


class TransientError(TidelineError):
    """A failure that may pass on its own; tasks retry these and only these."""


class EmbedderUnavailable(TransientError):
    """The embedding backend failed, timed out, or is switched off."""


class BrokerUnavailable(TransientError):
    """The Celery broker refused or did not answer a publish."""


class LLMUnavailable(TransientError):
    """The LLM endpoint refused, timed out, or answered 429/5xx on every attempt."""
