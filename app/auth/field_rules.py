"""What the login's request fields may hold (see :mod:`app.rules.rule_book`): the gate checks
them at every login, and AuthService's requests pass them as every API's do."""

from __future__ import annotations

from app.rules.field_rule import Rule
from app.rules.rule_book import RuleBook

USERNAME = Rule(
    required=True,
    pattern=r"^[A-Za-z0-9_-]{3,24}$",
    says="must be 3-24 characters of letters, digits, - and _",
)
MIN_PASSWORD_BYTES = 6
MAX_PASSWORD_BYTES = 70  # bcrypt reads at most 72 bytes
PASSWORD = Rule(
    required=True,
    # Characters bound bytes from both sides: 2 characters may be 8 bytes, 71 are at least 71.
    min_length=2,
    max_length=MAX_PASSWORD_BYTES,
    min_bytes=MIN_PASSWORD_BYTES,
    max_bytes=MAX_PASSWORD_BYTES,
    note=f"{MIN_PASSWORD_BYTES}-{MAX_PASSWORD_BYTES} bytes as UTF-8.",
)

RULES = RuleBook(
    fields={
        "services.auth.LoginRequest.username": USERNAME,
        "services.auth.LoginRequest.password": PASSWORD,
    }
)
