"""Field paths of the Update API's ``fields`` list, and the Show APIs' match on set fields.

``fields`` entries name fields as upstream does, by number with dots for nested fields
(``"9.1"`` is ``default_flavor.name`` of an App), or by proto field name
(``"default_flavor.name"``).
"""

from __future__ import annotations

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from app.services.status import Violations

Path = tuple[FieldDescriptor, ...]


def resolve(descriptor: Descriptor, text: str) -> Path | str:
    """The fields ``text`` names (``"2.1"`` or ``"key.name"``), or why it names none."""
    parts = text.strip().split(".")
    path: list[FieldDescriptor] = []
    current: Descriptor | None = descriptor
    for part in parts:
        if current is None:
            return f"{text!r}: {path[-1].name!r} has no sub-fields"
        field = (
            current.fields_by_number.get(int(part))
            if part.isascii() and part.isdigit()  # not "²", which isdigit() admits
            else current.fields_by_name.get(part)
        )
        if field is None:
            return f"{text!r}: {current.name} has no field {part!r}"
        path.append(field)
        is_message = field.type == FieldDescriptor.TYPE_MESSAGE and not _is_repeated(field)
        current = field.message_type if is_message else None
    return tuple(path)


def dotted(path: Path) -> str:
    """``default_flavor.name``: how messages name a path."""
    return ".".join(f.name for f in path)


def update_paths(
    descriptor: Descriptor,
    fields: list[str],
    *,
    protected: frozenset[str],
    read_only: frozenset[str],
    found: Violations,
) -> list[Path]:
    """The paths an Update applies; a violation per unknown, key or read-only entry."""
    if not fields:
        found.add("fields", 'list the fields to update (numbers like "4" or names)')
    paths = []
    for index, text in enumerate(fields):
        where = f"fields[{index}]"
        path = resolve(descriptor, text)
        if isinstance(path, str):
            found.add(where, path)
            continue
        top = path[0].name
        if top in protected:
            found.add(where, f"{text!r} ({dotted(path)}) identifies the object; it cannot change")
        elif top in read_only:
            found.add(where, f"{text!r} ({dotted(path)}) is set by the controller, not by users")
        else:
            paths.append(path)
    return paths


def apply(target: Message, source: Message, path: Path) -> None:
    """Copy the field at ``path`` from ``source`` into ``target``."""
    for field in path[:-1]:
        if not source.HasField(field.name):
            # The source has no such sub-message: everything under it is cleared.
            target.ClearField(field.name)
            return
        target = getattr(target, field.name)
        source = getattr(source, field.name)
    field = path[-1]
    if _is_repeated(field):
        target.ClearField(field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            getattr(target, field.name).MergeFrom(getattr(source, field.name))
        else:
            getattr(target, field.name).extend(getattr(source, field.name))
    elif field.type == FieldDescriptor.TYPE_MESSAGE:
        if source.HasField(field.name):
            getattr(target, field.name).CopyFrom(getattr(source, field.name))
        else:
            target.ClearField(field.name)
    else:
        setattr(target, field.name, getattr(source, field.name))


def matches(obj: Message, wanted: Message, *, skip: frozenset[str] = frozenset()) -> bool:
    """Whether ``obj`` has every non-empty field of ``wanted`` (nested messages field by field)."""
    for field, value in wanted.ListFields():
        if field.name in skip:
            continue
        have = getattr(obj, field.name)
        if _is_repeated(field):
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                if any(k not in have or have[k] != v for k, v in value.items()):
                    return False
            elif any(item not in have for item in value):
                return False
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            if not matches(have, value):
                return False
        elif have != value:
            return False
    return True


def _is_repeated(field: FieldDescriptor) -> bool:
    return field.is_repeated
