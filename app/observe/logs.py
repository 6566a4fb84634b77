"""Log lines: text or one JSON object a line, with tokens and passwords masked in either.

Secrets are kept out of messages where they are written (no logger is handed a token or a
password); the formatters mask anything that still looks like one (a JWT, a bearer credential,
``password=``/``token=`` in a query string) as a second line of defence, since a log is read by
more people than the API is.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

REDACTED = "[redacted]"
_SECRETS = (
    # A JWT: three base64url parts, the first an encoded JSON header ("{" → "eyJ").
    re.compile(r"eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*"),
    re.compile(r"(?i)(\bbearer\s+)[^\s,;\"']+"),
    re.compile(r"(?i)(\b(?:password|passwd|token|secret)=)[^&\s\"']+"),
)

FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def redact(text: str) -> str:
    """``text`` with every credential-looking part replaced by ``[redacted]``."""
    for pattern in _SECRETS:
        text = pattern.sub(
            lambda found: (found.group(1) if found.groups() else "") + REDACTED, text
        )
    return text


class TextFormatter(logging.Formatter):
    """The classic one-line format, credentials masked."""

    def __init__(self) -> None:
        super().__init__(FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, and a request line's fields."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return redact(json.dumps(line, default=str))


def audit_to_file(path: Path, log_format: str = "text") -> None:
    """Append the ``portico.audit`` lines to ``path`` instead of stderr (a command's output is its
    result; its audit trail is a log)."""
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    audit = logging.getLogger("portico.audit")
    audit.addHandler(handler)
    audit.setLevel(logging.INFO)
    audit.propagate = False


def configure_logging(log_format: str = "text", level: int = logging.INFO) -> None:
    """Send every log line to stderr in ``log_format`` (``text`` or ``json``)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    # uvicorn's loggers keep their own handlers otherwise, bypassing the format and the masking.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
