"""Image references: what a uri may be, and the name, version, format and id parsed from it."""

from __future__ import annotations

import pytest

from app.services.kudo.images import InvalidReference, parse_reference


@pytest.mark.parametrize(
    ("uri", "image_format", "name", "version"),
    [
        ("nginx", "docker", "nginx", "latest"),
        ("docker://nginx:1.25", "docker", "nginx", "1.25"),
        ("oci://quay.io/coreos/etcd:v3.5", "oci", "quay.io/coreos/etcd", "v3.5"),
        ("localhost:5000/team/app", "docker", "localhost:5000/team/app", "latest"),
        ("redis@sha256:" + "a" * 64, "docker", "redis", "sha256:" + "a" * 64),
    ],
)
def test_references_parse_into_name_version_and_format(uri, image_format, name, version):
    reference = parse_reference(uri)
    assert (reference.format, reference.name, reference.version) == (image_format, name, version)
    assert reference.id.startswith("sha512-") and len(reference.id) == 7 + 64
    assert parse_reference(uri).id == reference.id


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("", "required"),
        ("http://nginx", "unsupported scheme"),
        ("Nginx:1", "not an image reference"),
        ("nginx:", "not an image reference"),
        ("a" * 1025, "at most 1024"),
    ],
)
def test_what_is_not_an_image_reference(uri, problem):
    with pytest.raises(InvalidReference, match=problem):
        parse_reference(uri)
