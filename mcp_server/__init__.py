"""The MCP server: tools that parse a call, hand it to the service, and return a typed result.

`app` composes the service and serves it over stdio or streamable HTTP; `tools` holds one module
per concept; `models` and `models_organize` are the tools' structured results; `auth` maps bearer
tokens to agents.
"""

__all__ = ["app", "auth", "context", "models", "models_organize", "tools"]
