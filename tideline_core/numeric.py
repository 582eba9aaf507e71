"""numpy, imported on first use: a process that computes with no vector (a hook without a server) never loads it.

Every module of the package takes `np` from here, so one `import numpy` anywhere in the package
cannot undo the saving. Loading it costs a hook's whole process a tenth of its time; a server and
the workers load it on their first vector. The first attribute asked for imports numpy under the
import system's own lock (safe from several threads at once; copying the same namespace twice is
harmless), then copies its namespace into this stand-in, so later attributes are plain lookups.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["np"]


class _OnFirstUse(ModuleType):
    """Stands in for a module until an attribute is asked for, then answers as it."""

    def __getattr__(self, attribute: str) -> Any:  # only for names not yet copied in
        module = importlib.import_module(self.__name__)  # the import system's lock: loaded once, whoever asks
        vars(self).update({k: v for k, v in vars(module).items() if k not in ("__name__", "__spec__", "__loader__")})
        return getattr(module, attribute)


if TYPE_CHECKING:
    import numpy as np
else:
    np = _OnFirstUse("numpy")
