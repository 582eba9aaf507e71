"""An in-process memory provider for runtimes with plugin hooks: the server's service, database and broker.

    from tideline_provider import TidelineProvider

    memory = TidelineProvider(agent="hermes")
    system_prompt += memory.system_prompt_block()
    context = memory.prefetch(user_message)
    ...
    memory.sync_turn(user_message, reply)

See `TidelineProvider` for every hook, and `docs/provider_example.py` for a complete run. For Hermes Agent,
`tideline_provider.hermes.TidelineMemoryProvider` is its memory provider contract over this class.
"""

from tideline_provider.provider import TidelineProvider

__all__ = ["TidelineProvider"]
