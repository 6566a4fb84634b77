"""Base64 has one strictness on every protocol: padding optional, the protocol's alphabet only."""

from __future__ import annotations

import binascii

import pytest

from app.gateway.codec import base64_text


@pytest.mark.parametrize("text", ["YWI/", "YWI/Pw", "YWI/Pw=="])
def test_padding_is_optional(text):
    assert base64_text.decode(text) == b"ab?" + (b"?" if len(text) > 4 else b"")


@pytest.mark.parametrize("text", ["!!!", "YQ YQ", "YWI_", "a"])
def test_other_characters_are_refused(text):
    with pytest.raises(binascii.Error):
        base64_text.decode(text)


def test_the_url_safe_alphabet_is_its_own():
    assert base64_text.decode("YWI_Pw", url_safe=True) == b"ab??"
    with pytest.raises(binascii.Error):
        base64_text.decode("YWI/Pw", url_safe=True)  # the standard alphabet's / is not in it
    with pytest.raises(binascii.Error):
        base64_text.decode("YW!_", url_safe=True)  # discarded by urlsafe_b64decode before


def test_encodings_round_trip():
    for data in (b"", b"a", b"ab", b"abc", bytes(range(256))):
        assert base64_text.decode(base64_text.encode(data)) == data
        assert base64_text.decode(base64_text.encode_unpadded(data)) == data
        assert "=" not in base64_text.encode_unpadded(data)
