"""SASL on a gateway client connection (gateway/sasl.py): Kafka's handshake order and rules before
authentication, the principal taken from the client's own exchange only once the broker accepted
it, re-authentication (KIP-368), and the gateway's own SCRAM client (RFC 7677's test vector)."""

from __future__ import annotations

import base64

import pytest

from gateway.sasl import (
    API_VERSIONS,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    SaslSession,
    ScramClient,
    State,
    Verdict,
    extract_username,
)

METADATA, JOIN_GROUP, FETCH = 3, 11, 1
NONE, SASL_AUTHENTICATION_FAILED = 0, 58


def plain(user: str, password: str = "pw", authzid: str = "") -> bytes:
    return f"{authzid}\0{user}\0{password}".encode()


def scram_first(user: str) -> bytes:
    return f"n,,n={user},r=abc".encode()


def authenticated(mechanism="PLAIN", user="alice", lifetime_ms=0, now=0.0) -> SaslSession:
    s = SaslSession()
    assert s.admit(API_VERSIONS, 3, now).verdict is Verdict.FORWARD
    assert s.admit(SASL_HANDSHAKE, 1, now, mechanism=mechanism).verdict is Verdict.FORWARD
    assert s.handshake_answered(NONE)
    first = plain(user) if mechanism == "PLAIN" else scram_first(user)
    assert s.admit(SASL_AUTHENTICATE, 2, now, auth_bytes=first).verdict is Verdict.FORWARD
    if mechanism != "PLAIN":
        assert s.authenticate_answered(NONE, 0, now) == (True, "")
        assert s.principal is None  # the server-first-message authenticates nobody
        assert s.admit(SASL_AUTHENTICATE, 2, now, auth_bytes=b"c=biws,r=abcdef,p=proof").verdict is Verdict.FORWARD
    assert s.authenticate_answered(NONE, lifetime_ms, now) == (True, "")
    return s


# ------------------------------------------------------------ principal extraction
def test_plain_principal_is_the_username_and_an_authzid_must_name_the_same_user():
    assert extract_username("PLAIN", plain("alice")) == "alice"
    assert extract_username("PLAIN", plain("alice", authzid="alice")) == "alice"
    with pytest.raises(ValueError, match="authorization id that is different from username"):
        extract_username("PLAIN", plain("alice", authzid="admin"))
    with pytest.raises(ValueError, match="expected 3 tokens"):
        extract_username("PLAIN", b"alice\0pw")
    with pytest.raises(ValueError, match="username not specified"):
        extract_username("PLAIN", plain(""))


def test_scram_principal_is_the_n_name_with_its_escapes_undone():
    assert extract_username("SCRAM-SHA-256", b"n,,n=bob,r=xyz") == "bob"
    assert extract_username("SCRAM-SHA-512", b"n,,n=a=2Cb=3Dc,r=xyz") == "a,b=c"
    assert extract_username("SCRAM-SHA-256", b"n,a=bob,n=bob,r=xyz") == "bob"
    with pytest.raises(ValueError):
        extract_username("SCRAM-SHA-256", b"n,a=admin,n=bob,r=xyz")  # another authzid
    with pytest.raises(ValueError, match="delegation-token"):
        extract_username("SCRAM-SHA-256", b"n,,n=tokenid,r=xyz,tokenauth=true")
    with pytest.raises(ValueError):
        extract_username("SCRAM-SHA-256", b"garbage")


# ------------------------------------------------------------ handshake order
def test_only_api_versions_and_sasl_handshake_come_before_authentication():
    for api_key in (METADATA, JOIN_GROUP, FETCH, SASL_AUTHENTICATE):
        s = SaslSession()
        admission = s.admit(api_key, 0, 0.0)
        assert admission.verdict is Verdict.CLOSE
        assert "during SASL handshake" in admission.reason
        assert s.state is State.FAILED and not s.authenticated


def test_after_the_handshake_only_sasl_authenticate_is_accepted():
    s = SaslSession()
    s.admit(SASL_HANDSHAKE, 1, 0.0, mechanism="PLAIN")
    admission = s.admit(METADATA, 12, 0.0)
    assert admission.verdict is Verdict.CLOSE and "during SASL authentication" in admission.reason


def test_an_unsupported_mechanism_is_answered_with_the_enabled_list_then_closed():
    s = SaslSession(("PLAIN", "SCRAM-SHA-512"))
    admission = s.admit(SASL_HANDSHAKE, 1, 0.0, mechanism="GSSAPI")
    assert admission.verdict is Verdict.UNSUPPORTED_MECHANISM
    assert admission.reason == "Unsupported SASL mechanism GSSAPI"
    assert s.enabled == ("PLAIN", "SCRAM-SHA-512") and s.state is State.FAILED
    assert s.admit(API_VERSIONS, 3, 0.0).verdict is Verdict.CLOSE


def test_sasl_handshake_v0_is_refused():
    s = SaslSession()
    assert s.admit(SASL_HANDSHAKE, 0, 0.0, mechanism="PLAIN").verdict is Verdict.CLOSE


def test_the_principal_is_taken_only_from_a_final_round_the_broker_accepted():
    s = authenticated("PLAIN", "alice")
    assert s.authenticated and s.principal == "User:alice"
    assert s.admit(JOIN_GROUP, 9, 0.0).verdict is Verdict.FORWARD
    t = authenticated("SCRAM-SHA-256", "bob")
    assert t.principal == "User:bob" and t.mechanism == "SCRAM-SHA-256"


def test_a_wrong_password_fails_and_closes_with_no_principal():
    s = SaslSession()
    s.admit(SASL_HANDSHAKE, 1, 0.0, mechanism="SCRAM-SHA-256")
    s.handshake_answered(NONE)
    s.admit(SASL_AUTHENTICATE, 2, 0.0, auth_bytes=scram_first("bob"))
    s.authenticate_answered(NONE, 0, 0.0)
    s.admit(SASL_AUTHENTICATE, 2, 0.0, auth_bytes=b"c=biws,r=abcdef,p=wrong")
    keep, why = s.authenticate_answered(SASL_AUTHENTICATION_FAILED, 0, 0.0)
    assert not keep and "58" in why
    assert s.principal is None and s.state is State.FAILED
    assert s.admit(JOIN_GROUP, 9, 0.0).verdict is Verdict.CLOSE


def test_a_broker_refused_handshake_closes():
    s = SaslSession()
    s.admit(SASL_HANDSHAKE, 1, 0.0, mechanism="SCRAM-SHA-512")
    assert not s.handshake_answered(33)
    assert s.state is State.FAILED


def test_bytes_the_gateway_cannot_read_never_authenticate_even_if_the_broker_accepts():
    s = SaslSession()
    s.admit(SASL_HANDSHAKE, 1, 0.0, mechanism="PLAIN")
    s.admit(SASL_AUTHENTICATE, 2, 0.0, auth_bytes=b"no separators")
    keep, why = s.authenticate_answered(NONE, 0, 0.0)
    assert not keep and "no principal" in why and s.principal is None


def test_a_third_scram_round_is_refused():
    s = authenticated("SCRAM-SHA-256")
    s.state = State.AUTHENTICATE  # as if mid-exchange with both rounds sent
    assert s.admit(SASL_AUTHENTICATE, 2, 0.0, auth_bytes=b"x").verdict is Verdict.CLOSE


# ------------------------------------------------------------ re-authentication (KIP-368)
def test_a_request_after_the_session_expired_closes_the_connection():
    s = authenticated(lifetime_ms=10_000, now=100.0)
    assert s.expires_at == 110.0
    assert s.admit(METADATA, 12, 109.9).verdict is Verdict.FORWARD
    admission = s.admit(METADATA, 12, 110.0)
    assert admission.verdict is Verdict.CLOSE and "expired" in admission.reason


def test_no_session_lifetime_never_expires():
    s = authenticated(lifetime_ms=0)
    assert s.expires_at is None and s.admit(METADATA, 12, 1e9).verdict is Verdict.FORWARD


def test_re_authentication_renews_the_session_even_after_it_expired():
    s = authenticated("PLAIN", "alice", lifetime_ms=10_000, now=0.0)
    assert s.admit(SASL_HANDSHAKE, 1, 20.0, mechanism="PLAIN").verdict is Verdict.FORWARD
    assert s.admit(METADATA, 12, 20.0).verdict is Verdict.CLOSE  # only SaslAuthenticate while re-authenticating


def test_re_authentication_extends_the_session_and_keeps_the_principal():
    s = authenticated("PLAIN", "alice", lifetime_ms=10_000, now=0.0)
    s.admit(SASL_HANDSHAKE, 1, 9.0, mechanism="PLAIN")
    s.handshake_answered(NONE)
    s.admit(SASL_AUTHENTICATE, 2, 9.0, auth_bytes=plain("alice"))
    assert s.authenticate_answered(NONE, 10_000, 9.0) == (True, "")
    assert s.principal == "User:alice" and s.expires_at == 19.0 and s.authentications == 2
    assert s.admit(JOIN_GROUP, 9, 15.0).verdict is Verdict.FORWARD


def test_re_authentication_cannot_change_the_principal():
    s = authenticated("PLAIN", "alice", lifetime_ms=10_000)
    s.admit(SASL_HANDSHAKE, 1, 1.0, mechanism="PLAIN")
    s.handshake_answered(NONE)
    s.admit(SASL_AUTHENTICATE, 2, 1.0, auth_bytes=plain("admin"))
    keep, why = s.authenticate_answered(NONE, 10_000, 1.0)
    assert not keep
    assert why == "Cannot change principals during re-authentication from User:alice: User:admin"
    assert s.state is State.FAILED


# ------------------------------------------------------------ the gateway's own SCRAM client
def test_scram_client_matches_rfc_7677():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first_message() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    assert client.final_message(server_first) == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    client.verify_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    with pytest.raises(ValueError, match="does not verify"):
        client.verify_final(b"v=" + base64.b64encode(b"\0" * 32))
    with pytest.raises(ValueError, match="invalid-proof"):
        client.verify_final(b"e=invalid-proof")


def test_re_authentication_keeps_the_mechanism():
    s = authenticated("PLAIN", "alice", lifetime_ms=10_000)
    admission = s.admit(SASL_HANDSHAKE, 1, 1.0, mechanism="SCRAM-SHA-256")
    assert admission.verdict is Verdict.CLOSE and s.state is State.FAILED
