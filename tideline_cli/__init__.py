"""The `tideline` command line: up, serve, worker, beat, flower, status, search, write."""
