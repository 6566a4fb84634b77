"""Log lines that repeat: said once per interval, with how many were left unsaid meanwhile.

An outage of the database fails every call and every background loop at once; a line (let alone
a traceback) for each buried the one line an operator needs under thousands that say the same.
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict

DEFAULT_EVERY_SECONDS = 10.0
# Distinct lines remembered (the oldest forgotten first): the keys are a few fixed messages, but
# nothing a caller sends may grow this without bound.
_MAX_KEYS = 256


class Repeats:
    """Says a warning of ``key`` at most once per ``every_seconds``; the next one says how many
    of its kind were not said since the last."""

    def __init__(
        self, logger: logging.Logger, every_seconds: float = DEFAULT_EVERY_SECONDS
    ) -> None:
        self._logger = logger
        self._every = every_seconds
        self._said: OrderedDict[str, tuple[float, int]] = OrderedDict()

    def warning(self, key: str, message: str, *args: object) -> bool:
        """Log ``message % args`` unless ``key`` was said less than the interval ago; whether it
        was said."""
        now = time.monotonic()
        last, unsaid = self._said.get(key, (-math.inf, 0))
        if now - last < self._every:
            self._said[key] = (last, unsaid + 1)
            return False
        self._said[key] = (now, 0)
        self._said.move_to_end(key)
        while len(self._said) > _MAX_KEYS:
            self._said.popitem(last=False)
        if unsaid:
            message += " (%d more like it in the %.0f s since it was last said)"
            args = (*args, unsaid, now - last)
        self._logger.warning(message, *args)
        return True
