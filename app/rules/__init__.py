"""What request fields may hold: each API's book of rules (`rule_book`, of `field_rule` rules,
some of them `named_rules` several APIs use), checked before every servicer (`field_checks`) and
published in the OpenAPI document; its regexes read alike in Python and JSON Schema
(`text_patterns`).

Imports nothing of Portico's rooms: the services, the gate and the OpenAPI generator read it."""
