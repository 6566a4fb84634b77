"""Entity tags from revisions, and from the values a reply shows besides."""

from __future__ import annotations

from app.services.revisions import etag


def test_one_object_is_its_revision_and_a_list_its_newest_and_count() -> None:
    assert etag([812]) == '"812"'
    assert etag([3, 812, 40]) == '"812-3"'
    assert etag([]) == '"0-0"'


def test_derived_values_change_the_tag_whatever_their_split() -> None:
    plain = etag([812])
    shown = etag([812], ["READY", "1700000000"])
    assert shown.startswith('"812.') and shown != plain
    assert etag([812], ["READY", "1700000000"]) == shown  # the same values, the same tag
    assert etag([812], ["NOT_READY", "1700000000"]) != shown
    assert etag([812], ["a", "bc"]) != etag([812], ["ab", "c"])
