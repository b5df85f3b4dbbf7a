"""The principal of a bridged request cannot be forged by a JSON client: the gateway signs its
record (header coordinator-principal-mac, under the gateway's key, streaming/trust.py), the state
function verifies it with the key it reads itself, and the envelope's `principal` is taken only from
a record that verified; anyone else's record naming a principal is refused INVALID_REQUEST."""

from __future__ import annotations

import asyncio
import json
import secrets

import pandas as pd
import pytest

from coordinator.envelope import Rejection, parse_request
from coordinator.errors import Errors
from coordinator.messages import Request
from gateway.bridge import CoordinatorBridge
from gateway.config import GatewayConfig
from streaming.step import StepSettings, records_from_frames
from streaming.trust import MAC_HEADER, PRINCIPAL_MAC_HEADER, sign, sign_principal, verify_principal

HEARTBEAT = {"groupId": "g", "generationId": 1, "memberId": "m", "groupInstanceId": None}


def envelope(principal: str | None = "User:alice") -> bytes:
    env = {"apiKey": "Heartbeat", "apiVersion": 4, "correlationId": 7, "clientId": "c", "request": HEARTBEAT}
    if principal is not None:
        env["principal"] = principal
    return json.dumps(env).encode()


@pytest.fixture
def gateway_key(tmp_path):
    key = secrets.token_bytes(32)
    path = tmp_path / "gateway.key"
    path.write_text(key.hex())
    return key, str(path)


def settings(key_file: str) -> StepSettings:
    return StepSettings(
        coordinator={}, responses_topic="r", events_topic="e", state_log_topic="s", requests_topic="q",
        principal_key_file=key_file,
    )  # fmt: skip


def request_frame(key: str, value: bytes, principal_mac: str | None) -> pd.DataFrame:
    """A request-topic row as the query hands it over."""
    return pd.DataFrame(
        [(key, value, len(value), 1, 0, 5, True, False, None, None, principal_mac)],
        columns=["key", "value", "value_size", "ts_ms", "src_partition", "src_offset", "key_valid", "internal",
                 "mac", "stamp", "principal_mac"],
    )  # fmt: skip


def parsed(frame: pd.DataFrame, key_file: str) -> Request | Rejection:
    [rec], forged = records_from_frames([frame], settings(key_file))
    assert not forged
    return parse_request(
        rec.value, key=rec.key, time_ms=rec.time_ms, principal_verified=rec.principal_verified, internal=rec.internal
    )


def test_a_signed_principal_is_taken(gateway_key):
    key, path = gateway_key
    value = envelope()
    request = parsed(request_frame("g", value, sign_principal(key, b"g", value).decode()), path)
    assert isinstance(request, Request) and request.principal == "User:alice"


def test_a_json_client_cannot_name_a_principal(gateway_key):
    key, path = gateway_key
    value = envelope("User:admin")
    forged = {
        "no MAC": None,
        "a wrong MAC": "0" * 64,
        "another key's": sign_principal(b"k" * 32, b"g", value).decode(),
        "another record's": sign_principal(key, b"g", envelope("User:alice")).decode(),
        "another record key's": sign_principal(key, b"h", value).decode(),
        "an internal-channel MAC under the same key": sign(key, b"g", value).decode(),
    }
    for what, mac in forged.items():
        result = parsed(request_frame("g", value, mac), path)
        assert isinstance(result, Rejection), what
        assert result.error == Errors.INVALID_REQUEST and "principal" in result.message, what
    # and a service without the gateway's key takes no principal at all
    result = parsed(request_frame("g", value, sign_principal(key, b"g", value).decode()), "")
    assert isinstance(result, Rejection) and result.error == Errors.INVALID_REQUEST


def test_a_request_without_a_principal_is_unchanged(gateway_key):
    _, path = gateway_key
    request = parsed(request_frame("g", envelope(None), None), path)
    assert isinstance(request, Request) and request.principal is None


class CapturingProducer:
    def __init__(self):
        self.sent: list[dict] = []

    def produce(self, topic, value, key, headers=None, on_delivery=None):
        self.sent.append({"topic": topic, "key": key, "value": value, "headers": headers})


@pytest.mark.parametrize("keyed", [True, False])
def test_the_bridge_signs_the_principal_of_its_requests(gateway_key, keyed):
    key, path = gateway_key
    cfg = GatewayConfig(bootstrap_servers="127.0.0.1:1", principal_key_file=path if keyed else "")

    async def main():
        bridge = CoordinatorBridge(cfg)
        bridge._loop = asyncio.get_running_loop()
        bridge.ready.set()
        producer = bridge._producer = CapturingProducer()
        call = asyncio.create_task(
            bridge.call("Heartbeat", 4, HEARTBEAT, key="g", client_id="c", client_host="/127.0.0.1", timeout_s=5,
                        principal="User:alice")
        )  # fmt: skip
        while not producer.sent:
            await asyncio.sleep(0.01)
        call.cancel()
        return producer.sent[0]

    sent = asyncio.run(main())
    value = sent["value"]
    if not keyed:  # no key: no principal (nothing the service could trust)
        assert "principal" not in json.loads(value) and not sent["headers"]
        return
    assert json.loads(value)["principal"] == "User:alice"
    [(name, mac)] = sent["headers"]
    assert name == PRINCIPAL_MAC_HEADER != MAC_HEADER
    assert verify_principal(key, b"g", value, mac)
    request = parsed(request_frame("g", value, mac.decode()), path)
    assert isinstance(request, Request) and request.principal == "User:alice"
