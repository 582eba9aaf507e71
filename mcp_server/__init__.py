"""The MCP server: validates writes, persists them, enqueues derived work, and serves reads."""
