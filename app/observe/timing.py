"""Store operations timed (and traced inside a traced call), wrapped once at import.

:func:`instrument` wraps a class's public coroutine methods, so each store operation is one
histogram observation labelled by its method name, and a span when it runs inside a call being
traced (background work makes no root spans of its own).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import time
from collections.abc import Callable, Coroutine
from typing import Any

from opentelemetry import trace

from app.observe import loop_counters, tracing
from app.observe.metrics import RECORDING, STORE_SECONDS


def instrument(cls: type, prefix: str = "", skip: frozenset[str] = frozenset()) -> None:
    """Time every public coroutine method of ``cls`` as operation ``<prefix><name>``."""
    for name, method in list(vars(cls).items()):
        if name.startswith("_") or name in skip or not inspect.iscoroutinefunction(method):
            continue
        setattr(cls, name, _timed(prefix + name, method))


def _timed(
    operation: str, method: Callable[..., Coroutine[Any, Any, Any]]
) -> Callable[..., Coroutine[Any, Any, Any]]:
    seconds = loop_counters.histogram(STORE_SECONDS.labels(operation))
    span_name = f"store {operation}"

    @functools.wraps(method)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        spans = tracing.tracer()
        span: Any = _NO_SPAN
        if spans is not None and trace.get_current_span().is_recording():
            span = spans.start_as_current_span(span_name, attributes={"db.operation": operation})
        with span:
            if not RECORDING.on:
                return await method(*args, **kwargs)
            started = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                seconds.observe(time.perf_counter() - started)

    return timed


_NO_SPAN = contextlib.nullcontext()
