"""Image references: an instance's ``uri`` names its image, e.g. ``docker://quay.io/coreos/etcd:v3.5``.

The grammar is Docker's reference grammar (``[registry[:port]/]path[:tag][@digest]``) behind an
optional ``docker://`` or ``oci://`` scheme. The version is the tag, else the digest, else
``latest``. The image id is ``sha512-`` and the first 64 hex digits of the SHA-512 of the ``uri``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from app.rules.text_patterns import (
    IMAGE_COMPONENT,
    IMAGE_DIGEST,
    IMAGE_DOMAIN,
    IMAGE_TAG,
    MAX_IMAGE_REFERENCE,
)

# The grammar is the uri's field rule's (app.rules.text_patterns), with names for its parts.
_REFERENCE = re.compile(
    rf"(?P<name>(?:(?P<domain>{IMAGE_DOMAIN})/)?{IMAGE_COMPONENT}(?:/{IMAGE_COMPONENT})*)"
    rf"(?::(?P<tag>{IMAGE_TAG}))?(?:@(?P<digest>{IMAGE_DIGEST}))?"
)
SCHEMES = {"docker://": "docker", "oci://": "oci"}
MAX_URI = MAX_IMAGE_REFERENCE


@dataclass(frozen=True)
class ImageReference:
    """A parsed image reference."""

    uri: str
    format: str  # "docker" or "oci"
    name: str
    version: str

    @property
    def id(self) -> str:
        """A stable, content-free id: the uri's SHA-512, in rkt's ``sha512-`` form."""
        return "sha512-" + hashlib.sha512(self.uri.encode()).hexdigest()[:64]


class InvalidReference(ValueError):
    """The uri is not an image reference; the message says why."""


def parse_reference(uri: str) -> ImageReference:
    """Parse ``uri``; InvalidReference if it is not an image reference."""
    if not uri:
        raise InvalidReference("is required (an image reference such as docker://nginx:1.25)")
    if len(uri) > MAX_URI:
        raise InvalidReference(f"must be at most {MAX_URI} characters")
    rest, image_format = uri, "docker"
    for scheme, name in SCHEMES.items():
        if uri.startswith(scheme):
            rest, image_format = uri[len(scheme) :], name
            break
    else:
        if "://" in uri:
            raise InvalidReference(
                f"{uri!r}: unsupported scheme (use docker:// or oci://, or none)"
            )
    match = _REFERENCE.fullmatch(rest)  # `$` would let a final newline through
    if match is None:
        raise InvalidReference(
            f"{uri!r} is not an image reference ([registry[:port]/]path[:tag][@digest], "
            "lower-case path)"
        )
    version = match.group("tag") or match.group("digest") or "latest"
    return ImageReference(uri, image_format, match.group("name"), version)
