"""The `tideline` command line: the processes (up, serve, worker, beat, flower), the memory commands
(status, search, write), one command per dream stage, and eval."""

__all__ = ["main"]

from tideline_cli.main import main
