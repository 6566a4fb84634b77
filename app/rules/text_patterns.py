"""Regular expressions for field rules that read alike in Python's ``re`` and in JSON Schema.

A rule's ``pattern`` is checked by the server with ``re`` and published in the OpenAPI document,
whose regexes are ECMA 262's: so these use only what both read the same way (no ``\\s``, ``\\d``
or ``\\w``, whose sets differ; classes spelled out instead), and a final ``$`` that
:mod:`app.rules.field_rule` reads as the end of the text, as ECMA does.
"""

from __future__ import annotations

# What Python's str.strip() removes (str.isspace()), spelled out: ECMA's \s is another set.
SPACES = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_SPACE = f"[{SPACES}]"

# 1-65535 in ASCII digits, leading zeros allowed (int() reads them).
PORT_NUMBER = (
    r"0*([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
)
# An App's access port: tcp, udp or http in any case, a colon, a port.
ACCESS_PORT = rf"([Tt][Cc][Pp]|[Uu][Dd][Pp]|[Hh][Tt][Tt][Pp]):{PORT_NUMBER}"

# IP addresses as Python's ipaddress.ip_address reads them (no leading zeros in IPv4, IPv4
# only as an IPv6 address's last 32 bits, `::` for at least one group), without a scope id.
_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
IPV4 = rf"{_OCTET}(\.{_OCTET}){{3}}"
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"({_H16}:{_H16}|{IPV4})"
IPV6 = (
    "("
    + "|".join(  # RFC 3986's IPv6address, one alternative a line
        (
            rf"({_H16}:){{6}}{_LS32}",
            rf"::({_H16}:){{5}}{_LS32}",
            rf"({_H16})?::({_H16}:){{4}}{_LS32}",
            rf"(({_H16}:){{0,1}}{_H16})?::({_H16}:){{3}}{_LS32}",
            rf"(({_H16}:){{0,2}}{_H16})?::({_H16}:){{2}}{_LS32}",
            rf"(({_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
            rf"(({_H16}:){{0,4}}{_H16})?::{_LS32}",
            rf"(({_H16}:){{0,5}}{_H16})?::{_H16}",
            rf"(({_H16}:){{0,6}}{_H16})?::",
        )
    )
    + ")"
)
IP_ADDRESS = f"({IPV4}|{IPV6})"

# Docker's reference grammar ([registry[:port]/]path[:tag][@digest]), as its Go regexps read it
# (their \w is ASCII), behind an optional docker:// or oci:// scheme.
_DOMAIN_PART = r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?"
IMAGE_DOMAIN = rf"{_DOMAIN_PART}(\.{_DOMAIN_PART})*(:[0-9]+)?"
IMAGE_COMPONENT = r"[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*"
IMAGE_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
IMAGE_DIGEST = r"[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
MAX_IMAGE_REFERENCE = 1024  # characters
IMAGE_REFERENCE = (
    rf"^((docker|oci)://)?(({IMAGE_DOMAIN})/)?{IMAGE_COMPONENT}(/{IMAGE_COMPONENT})*"
    rf"(:{IMAGE_TAG})?(@{IMAGE_DIGEST})?$"
)


def listed(item: str) -> str:
    """Comma-separated ``item``s, each with spaces around it, empty ones skipped: what a server
    reading ``text.split(",")`` and stripping each part accepts."""
    part = f"{_SPACE}*({item}{_SPACE}*)?"
    return f"^{part}(,{part})*$"
