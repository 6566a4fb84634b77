"""Portico: five control-plane gRPC APIs, served over gRPC and REST/JSON from one process."""

from __future__ import annotations

from importlib import metadata

try:
    __version__ = metadata.version("portico")
except metadata.PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0.0.0+checkout"
