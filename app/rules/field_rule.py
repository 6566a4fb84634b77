"""One field rule: what a value must be, and why not, in words (for :mod:`.field_rules`)."""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    """What one field's value must be. For a repeated field, the element rules apply to each
    element and ``max_items``/``min_items`` to the list."""

    required: bool = False
    pattern: str | None = None  # a JSON Schema (ECMA) regex, matched anywhere like `re.search`
    says: str = ""  # the pattern or the choices in words, for the error message
    min_length: int | None = None
    max_length: int | None = None
    # Bounds in UTF-8 bytes (bcrypt reads bytes); JSON Schema counts characters only, so the
    # document gives the character bounds these imply and a ``note`` says the rest.
    min_bytes: int | None = None
    max_bytes: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Any, ...] = ()
    reserved: tuple[Any, ...] = ()  # values the pattern admits but that are taken
    min_items: int | None = None
    max_items: int | None = None
    unique: bool = False  # no element twice (JSON Schema's uniqueItems)
    note: str = ""  # what the servicer also checks that JSON Schema cannot say

    def problem(self, value: Any) -> str | None:
        """Why ``value`` (one element, when the field is repeated) breaks the rule, or None."""
        if isinstance(value, str):
            if self.max_length is not None and len(value) > self.max_length:
                return f"must be at most {self.max_length} characters (got {len(value)})"
            if self.min_length is not None and len(value) < self.min_length:
                return f"must be at least {self.min_length} characters (got {len(value)})"
            if self.pattern is not None and not _compiled(self.pattern).search(value):
                return f"{_shown(value)} {self.says or f'must match {self.pattern}'}"
            if self.min_bytes is not None or self.max_bytes is not None:
                size = len(value.encode())
                low: float = 0 if self.min_bytes is None else self.min_bytes
                high = math.inf if self.max_bytes is None else self.max_bytes
                if not low <= size <= high:
                    bounds = _range(self.min_bytes, self.max_bytes)
                    return f"must be {bounds} bytes as UTF-8 (got {size})"
        elif isinstance(value, int | float) and not isinstance(value, bool):
            low = -math.inf if self.minimum is None else self.minimum
            high = math.inf if self.maximum is None else self.maximum
            if not low <= value <= high:  # written so that NaN is refused too
                return f"must be {_range(self.minimum, self.maximum)} (got {value})"
        if self.choices and value not in self.choices:
            words = self.says or f"must be one of {', '.join(map(str, self.choices))}"
            return f"{words} (got {_shown(value)})"
        if value in self.reserved:
            return f"{_shown(value)} is reserved"
        return None

    def repeat(self, values: Any) -> int | None:
        """The index of the first element of ``values`` that an earlier one repeats, if the
        rule wants each once; else None."""
        if self.unique:
            seen = set()
            for index, value in enumerate(values):
                if value in seen:
                    return index
                seen.add(value)
        return None

    def count_problem(self, count: int) -> str | None:
        """Why a repeated field of ``count`` elements breaks the rule, or None."""
        if self.max_items is not None and count > self.max_items:
            return f"at most {self.max_items} are allowed (got {count})"
        if self.min_items is not None and count < self.min_items:
            least = "one is" if self.min_items == 1 else f"{self.min_items} are"
            return f"at least {least} required (got {count})"
        return None


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    # re's own cache is looked up with the flags on every call; a rule's pattern is fixed.
    # A final `$` ends the text in JSON Schema (ECMA 262); in Python it also matches before a
    # final newline, which the document's pattern refuses: `\Z` is the end, and only it.
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 66 else text[:65] + "…"


def _range(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"between {_num(low)} and {_num(high)}"
    if low is not None:
        return f"at least {_num(low)}"
    return f"at most {_num(high)}"


def _num(value: float | None) -> str:
    return str(int(value)) if value is not None and value == int(value) else str(value)
