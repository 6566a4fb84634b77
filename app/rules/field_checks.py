"""Applying a :class:`~app.rules.rule_book.RuleBook` to request messages.

Every request of every RPC passes here, so the walk is planned once per message type: which of
its fields can hold something a rule looks at, and how (one value, a list of values, a message or
a list of messages to walk into).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

from google.protobuf import descriptor
from google.protobuf.message import Message

from app.rules.field_rule import Rule
from app.rules.rule_book import RuleBook

Violation = tuple[str, str]

# How a set field is checked: its value, each element, its message, or each element's message.
_VALUE, _VALUES, _MESSAGE, _MESSAGES = range(4)


# By field descriptor (as ListFields gives them): name, rule, how, walk into its messages.
_Fields = dict[descriptor.FieldDescriptor, tuple[str, Rule | None, int, bool]]


@dataclass(frozen=True, slots=True)
class _Plan:
    fields: _Fields
    # Single fields a rule requires: descriptor, name, rule, value when unset.
    required: tuple[tuple[descriptor.FieldDescriptor, str, Rule, Any], ...]


class FieldChecks:
    """The checks of one book, planned per message type on first use."""

    def __init__(self, book: RuleBook) -> None:
        self.book = book
        self._ruled: dict[str, bool] = {}
        # By message class: a proxied upstream's types may share full names with other pools'.
        self._plans: dict[type, _Plan | None] = {}

    def may_apply(self, desc: descriptor.Descriptor, method: str | None = None) -> bool:
        """Whether any rule can apply to a request of type ``desc`` (of ``method``): other
        messages are not walked."""
        if method is not None and method in self.book.calls:
            return True
        known = self._ruled.get(desc.full_name)
        if known is None:
            self._ruled[desc.full_name] = False  # a recursive type ends here; its fields decide
            known = any(
                fd.full_name in self.book.fields
                or (fd.message_type is not None and self.may_apply(fd.message_type))
                for fd in desc.fields
            )
            self._ruled[desc.full_name] = known
        return known

    def violations(self, message: Message, method: str | None = None) -> list[Violation]:
        """Every (field path, problem) of ``message`` under the book's field rules, and the
        rules of ``method`` when given. Paths are proto field names
        (``worker_node_pools[0].name``)."""
        found: list[Violation] = []
        if method is not None:
            for path, rule in self.book.call_rules(method).items():
                _call_violations(message, path.split("."), "", rule, found)
        self._field_violations(message, "", found)
        if len(found) < 2:
            return found  # nothing to order (almost every request: none at all)
        desc = _descriptor(message)
        return sorted(found, key=lambda violation: _position(desc, violation[0]))

    def _field_violations(self, message: Message, prefix: str, found: list[Violation]) -> None:
        kind = type(message)
        plans = self._plans
        plan = plans[kind] if kind in plans else self._plan(kind, _descriptor(message))
        if plan is None:
            return
        fields = plan.fields
        # Only the fields that are set are walked (a request names few of its message's
        # fields), and a field's path is spelled out only where something is wrong or below it.
        # Fields are known by their descriptors: ListFields gives the same objects every time,
        # and a name read from one is a new string each time.
        listed = message.ListFields()
        for fd, value in listed:
            planned = fields.get(fd)
            if planned is None:
                continue
            name, rule, how, walk = planned
            if how == _MESSAGE:
                self._field_violations(value, f"{prefix}{name}.", found)
                continue
            if how == _VALUE:
                problem = rule.problem(value) if rule is not None else None
                if problem:
                    found.append((prefix + name, problem))
                continue
            if rule is not None:
                problem = rule.count_problem(len(value))
                if problem:
                    found.append((prefix + name, problem))
                    continue
                twice = rule.repeat(value)
                if twice is not None:
                    found.append((f"{prefix}{name}[{twice}]", _repeated(value[twice])))
            if how == _MESSAGES:
                if walk:
                    for index, item in enumerate(value):
                        self._field_violations(item, f"{prefix}{name}[{index}].", found)
            elif rule is not None:
                for index, item in enumerate(value):
                    problem = rule.problem(item)
                    if problem:
                        found.append((f"{prefix}{name}[{index}]", problem))
        if plan.required:
            present = {fd for fd, _ in listed}
            for fd, name, rule, unset in plan.required:
                if fd not in present:
                    found.extend(_value_violations(rule, unset, f"{prefix}{name}", set_=False))

    def _plan(self, kind: type, desc: descriptor.Descriptor) -> _Plan | None:
        """How messages of class ``kind`` (of ``desc``) have their set fields checked; None
        when no rule can apply below them."""
        plan = None
        rules = self.book.fields
        if self.may_apply(desc):
            fields: _Fields = {}
            for fd in desc.fields:
                sub = fd.message_type
                rule = rules.get(fd.full_name)
                if fd.is_repeated:
                    if not _is_map(fd):
                        walk = sub is not None and self.may_apply(sub)
                        how = _MESSAGES if sub else _VALUES
                        fields[fd] = (fd.name, rule, how, walk)
                elif sub is None:
                    fields[fd] = (fd.name, rule, _VALUE, False)
                elif self.may_apply(sub):
                    fields[fd] = (fd.name, rule, _MESSAGE, True)
            required = tuple(
                (fd, fd.name, rules[fd.full_name], fd.default_value)
                for fd in desc.fields
                if not fd.is_repeated and fd.full_name in rules and rules[fd.full_name].required
            )
            plan = _Plan(fields, required)
        self._plans[kind] = plan
        return plan


def _position(desc: descriptor.Descriptor | None, path: str) -> tuple[int, ...]:
    """Where a path is in the message: its fields' declaration indices and list indices."""
    position: list[int] = []
    for part in path.split("."):
        name, _, index = part.partition("[")
        fd = desc.fields_by_name.get(name) if desc is not None else None
        position.append(fd.index if fd is not None else len(position))
        if index:
            position.append(int(index.rstrip("]")) if index.rstrip("]").isdigit() else 0)
        desc = fd.message_type if fd is not None else None
    return tuple(position)


def _value_violations(rule: Rule, value: Any, where: str, *, set_: bool) -> list[Violation]:
    if not set_:
        if rule.required:
            # A number's range says more than "required" does (0 is the unset number).
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            return [(where, (rule.problem(value) if numeric else None) or "is required")]
        return []
    problem = rule.problem(value)
    return [(where, problem)] if problem else []


def _call_violations(
    message: Message, parts: list[str], prefix: str, rule: Rule, found: list[Violation]
) -> None:
    """The call rule at ``parts`` below ``message``; unset parents count as unset."""
    name, rest = parts[0], parts[1:]
    fd = _descriptor(message).fields_by_name[name]
    where = f"{prefix}{name}"
    value = getattr(message, name)
    if fd.is_repeated:
        if not rest:
            problem = rule.count_problem(len(value))
            if problem:
                found.append((where, problem))
            elif rule.required and not value:
                found.append((where, "is required"))
            else:
                twice = rule.repeat(value)
                if twice is not None:
                    found.append((f"{where}[{twice}]", _repeated(value[twice])))
                for index, item in enumerate(value):
                    item_problem = rule.problem(item) if fd.message_type is None else None
                    if item_problem:
                        found.append((f"{where}[{index}]", item_problem))
            return
        for index, item in enumerate(value):
            _call_violations(item, rest, f"{where}[{index}].", rule, found)
        return
    if rest:
        _call_violations(value, rest, f"{where}.", rule, found)
        return
    present = message.HasField(name) if fd.message_type is not None else _is_set(fd, message, value)
    if fd.message_type is not None:
        if rule.required and not present:
            found.append((where, "is required"))
        return
    found.extend(_value_violations(rule, value, where, set_=present))


def _repeated(value: Any) -> str:
    shown = repr(value)
    return f"{shown if len(shown) <= 66 else shown[:65] + '…'} is given twice"


def _descriptor(message: Message) -> descriptor.Descriptor:
    # The stubs type DESCRIPTOR as the pure-Python or the upb class; both have this API.
    return cast(descriptor.Descriptor, message.DESCRIPTOR)


def _is_set(fd: descriptor.FieldDescriptor, message: Message, value: Any) -> bool:
    if fd.has_presence:
        return message.HasField(fd.name)
    return bool(value) or (isinstance(value, float) and math.isnan(value))


def _is_map(fd: descriptor.FieldDescriptor) -> bool:
    return fd.message_type is not None and fd.is_repeated and fd.message_type.GetOptions().map_entry
