"""Settings from the command line: a flag given wins over its ``PORTICO_*`` variable, and a
refusal names what the user typed (``--http-port: 99999 is not allowed``), not the variable
they never set."""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Callable
from typing import Any

from app.settings.config import ConfigurationError, Settings, grpc_port_given, variable

SETTINGS = frozenset(f.name for f in dataclasses.fields(Settings))


def remember_flags(parser: argparse.ArgumentParser) -> None:
    """Keep, in the parsed arguments, which flag sets which setting (``--auth`` sets
    ``proxy_auth``), so that a refusal can name the flag."""
    flags = {
        action.dest: action.option_strings[-1]
        for action in parser._actions  # argparse's own list; it has no public one
        if action.dest in SETTINGS and action.option_strings
    }
    parser.set_defaults(setting_flags=flags)


def given(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given as flags, by field name."""
    return {k: v for k, v in vars(args).items() if k in SETTINGS and v is not None}


def settings_from(args: argparse.Namespace, base: Settings) -> Settings:
    """``base`` with every flag that was given on the command line applied."""
    values = grpc_port_given({"grpc_server": base.grpc_server, **given(args)})
    return dataclasses.replace(base, **values)


def said_with_flags(message: str, args: argparse.Namespace) -> str:
    """``message`` with the variable of each setting given as a flag replaced by that flag."""
    flags: dict[str, str] = getattr(args, "setting_flags", {})
    for name in given(args):
        if name in flags:
            message = re.sub(rf"\b{variable(name)}\b", flags[name], message)
    return message


def settings_or_exit(args: argparse.Namespace) -> Settings:
    """The settings of the environment and the flags; the command ends with one line naming
    the flag (or variable) when they are refused."""
    try:
        return settings_from(args, Settings.from_env())
    except ConfigurationError as exc:
        raise SystemExit(said_with_flags(f"portico: {exc}", args)) from None


def naming_flags(args: argparse.Namespace, run: Callable[[], None]) -> None:
    """``run()``; a start it refuses (``portico: PORTICO_HTTP_HOST: cannot listen...``) names
    the flags given."""
    try:
        run()
    except SystemExit as exc:
        if isinstance(exc.code, str):
            raise SystemExit(said_with_flags(exc.code, args)) from None
        raise
