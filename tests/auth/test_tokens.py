"""Tokens: issued with every claim, verified strictly, forged ones refused."""

from __future__ import annotations

import base64
import json
import os
import stat
import time

import pytest
from jose import jwt

from app.auth.tokens import InvalidToken, TokenIssuer, load_secret
from app.settings.config import ConfigurationError

SECRET = b"s" * 32
ISSUER = TokenIssuer(SECRET, ttl_seconds=600)
STAMP = ISSUER.password_stamp("scrypt$16$8$1$salt$hash")


def _claims(**override):
    now = int(time.time())
    claims = {
        "sub": "42",
        "name": "alice",
        "role": "admin",
        "jti": "abc",
        "iat": now,
        "nbf": now,
        "exp": now + 60,
        "iss": "portico",
        "aud": "portico",
    }
    claims.update(override)
    return {k: v for k, v in claims.items() if v is not None}


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def test_issued_token_round_trips_with_every_claim():
    token, claims = ISSUER.issue(
        account_id="42", username="alice", role="viewer", password_stamp=STAMP
    )
    payload = jwt.get_unverified_claims(token)
    assert set(payload) >= {"sub", "name", "role", "iat", "nbf", "exp", "jti", "iss", "aud"}
    assert claims.expires_at - claims.issued_at == 600
    verified = ISSUER.verify(token)
    assert (verified.subject, verified.name, verified.role) == ("42", "alice", "viewer")
    assert verified.token_id == claims.token_id


def test_a_bound_account_s_token_names_its_organisation_for_the_dashboard():
    bound, _ = ISSUER.issue(
        account_id="7", username="dana", role="operator", password_stamp=STAMP, developer="acme"
    )
    assert jwt.get_unverified_claims(bound)["developer"] == "acme"
    free, _ = ISSUER.issue(account_id="8", username="erin", role="operator", password_stamp=STAMP)
    assert not {"developer", "operator"} & set(jwt.get_unverified_claims(free))


def test_each_token_has_its_own_id():
    first, _ = ISSUER.issue(account_id="1", username="a", role="admin", password_stamp=STAMP)
    second, _ = ISSUER.issue(account_id="1", username="a", role="admin", password_stamp=STAMP)
    assert ISSUER.verify(first).token_id != ISSUER.verify(second).token_id


def test_a_token_carries_a_stamp_of_the_password_hash_keyed_by_the_secret():
    token, _ = ISSUER.issue(account_id="42", username="alice", role="viewer", password_stamp=STAMP)
    assert ISSUER.verify(token).password_stamp == STAMP
    assert ISSUER.stamp_matches(STAMP, "scrypt$16$8$1$salt$hash")
    # Another hash of the account (a new password, a new salt), or another server's secret,
    # gives another stamp.
    assert not ISSUER.stamp_matches(STAMP, "scrypt$16$8$1$salt2$hash2")
    assert TokenIssuer(b"t" * 32).password_stamp("scrypt$16$8$1$salt$hash") != STAMP


def test_short_secret_is_refused():
    with pytest.raises(ConfigurationError, match="at least 32 bytes"):
        TokenIssuer(b"short")


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(
            lambda: _b64({"alg": "none", "typ": "JWT"}) + "." + _b64(_claims()) + ".", id="alg-none"
        ),
        pytest.param(lambda: jwt.encode(_claims(), SECRET, algorithm="HS512"), id="hs512"),
        pytest.param(lambda: jwt.encode(_claims(), b"x" * 32, algorithm="HS256"), id="wrong-key"),
        pytest.param(lambda: jwt.encode(_claims(exp=int(time.time()) - 120), SECRET), id="expired"),
        pytest.param(lambda: jwt.encode(_claims(exp=None), SECRET), id="no-exp"),
        pytest.param(lambda: jwt.encode(_claims(jti=None), SECRET), id="no-jti"),
        pytest.param(lambda: jwt.encode(_claims(sub=None), SECRET), id="no-sub"),
        pytest.param(lambda: jwt.encode(_claims(iat=None), SECRET), id="no-iat"),
        pytest.param(lambda: jwt.encode(_claims(nbf=None), SECRET), id="no-nbf"),
        pytest.param(
            lambda: jwt.encode(_claims(iat=int(time.time()) + 3600), SECRET), id="iat-future"
        ),
        pytest.param(
            lambda: jwt.encode(_claims(nbf=int(time.time()) + 3600), SECRET), id="nbf-future"
        ),
        pytest.param(lambda: jwt.encode(_claims(iss="someone-else"), SECRET), id="wrong-iss"),
        pytest.param(lambda: jwt.encode(_claims(aud="someone-else"), SECRET), id="wrong-aud"),
        pytest.param(
            lambda: jwt.encode(_claims(), SECRET, headers={"crit": ["exp"]}), id="crit-header"
        ),
        pytest.param(lambda: jwt.encode(_claims(pad="x" * 5000), SECRET), id="oversized"),
        pytest.param(lambda: "not.a.token", id="garbage"),
    ],
)
def test_forged_tokens_are_refused(forge):
    with pytest.raises(InvalidToken):
        ISSUER.verify(forge())


def test_generated_secret_is_kept_private_and_stable(tmp_path):
    first = load_secret("", tmp_path)
    assert len(first) >= 32
    assert stat.S_IMODE(os.stat(tmp_path / "jwt-secret").st_mode) == 0o600
    assert load_secret("", tmp_path) == first
    assert (
        load_secret("configured-secret-of-enough-length!!", tmp_path)
        == b"configured-secret-of-enough-length!!"
    )
