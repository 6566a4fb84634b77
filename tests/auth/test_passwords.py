"""Password hashes: salted, verifiable, cheap in tests, strong by default."""

from __future__ import annotations

from app.auth.passwords import STRONG_COST, PasswordHasher

CHEAP = PasswordHasher(cost=2**4)


def test_hash_verifies_only_the_right_password():
    stored = CHEAP.hash("correct horse")
    assert CHEAP.verify("correct horse", stored)
    assert not CHEAP.verify("wrong horse", stored)


def test_hashes_are_salted():
    assert CHEAP.hash("same") != CHEAP.hash("same")


def test_malformed_hashes_never_verify():
    for stored in ["", "plain", "md5$x$y$z$a$b", "scrypt$notanumber$8$1$AA==$AA=="]:
        assert not CHEAP.verify("anything", stored)


def test_a_hash_records_its_cost_so_it_verifies_after_the_default_changes():
    stored = CHEAP.hash("pw123456")
    assert PasswordHasher().verify("pw123456", stored)


def test_default_cost_is_strong():
    assert PasswordHasher().cost == STRONG_COST >= 2**17
