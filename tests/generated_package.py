"""A generated client package imported from the folder a generator wrote it to, for one test:
on the import path only meanwhile, and forgotten afterwards (another test may generate anew)."""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def imported(folder: Path, package: str) -> Iterator[Any]:
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(package)
    finally:
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
            del sys.modules[name]
