"""`python -m tideline_console`: the console process, as `tideline console` and `tideline up` start it."""

from __future__ import annotations

import logging
import sys


def main() -> int:
    from pydantic import ValidationError

    from tideline_core.errors import ConfigurationError
    from tideline_core.settings import Settings

    try:
        settings = Settings()
    except ValidationError as exc:
        print(f"tideline: error: invalid settings: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        stream=sys.stderr, level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    from tideline_console.app import run

    try:
        run(settings)
    except ConfigurationError as exc:
        print(f"tideline: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
