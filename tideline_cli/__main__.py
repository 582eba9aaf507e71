"""`python -m tideline_cli` is the `tideline` command (used by `tideline up` to start its children)."""

import sys

from tideline_cli.main import main

sys.exit(main())
