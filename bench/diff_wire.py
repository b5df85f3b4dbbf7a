"""The differential test's two targets and its comparison (bench/differential.py).

`KafkaWire` is a blocking Kafka-protocol connection: a JSON body (Kafka's JSON converter names, as
the service's envelope carries them) is encoded with the gateway's wire codec (gateway/codec.py),
and the answer decoded back to JSON. The reference is a real broker spoken to only this way; the
service is the gateway for the APIs it bridges and the JSON envelope (`client.CoordinatorClient`)
for the others (the share-group APIs, which the gateway hides, and the group configs, which it
passes through to its own broker). A JSON answer is encoded and decoded by the same codec, so both
answers have exactly the fields of the version asked.

`normalise` replaces what legitimately differs between two clusters by stable placeholders (server
generated member ids, producer ids, coordinator node ids/hosts/ports, times, throttling, topic ids);
`differences` lists the paths where the normalised answers still differ.
"""

from __future__ import annotations

import re
import socket
import struct
from dataclasses import dataclass, field
from typing import Any

from client import CoordinatorClient
from coordinator.api import lookup
from gateway.apis import FIND_COORDINATOR, bridged_spec
from gateway.codec import decode_response, encode_request, encode_response

METADATA = 3


class KafkaWire:
    """One blocking Kafka-protocol connection (requests one at a time)."""

    def __init__(self, bootstrap: str, client_id: str, timeout_s: float = 60.0):
        host, _, port = bootstrap.rpartition(":")
        self.client_id = client_id
        self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self._cid = 0

    def call_key(self, api_key: int, version: int, body: dict) -> dict:
        self._cid += 1
        frame = encode_request(api_key, version, self._cid, self.client_id, body)
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", self._read(4))
        _, answer = decode_response(self._read(size), api_key, version)
        return answer

    def call(self, api: str, version: int, body: dict) -> dict:
        return self.call_key(api_key(api), version, body)

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("the connection closed")
            buf += chunk
        return buf

    def topic_ids(self) -> dict[str, str]:
        """name -> topic id (Kafka's base64 form) of every topic the broker has."""
        answer = self.call_key(
            METADATA, 12, {"topics": None, "allowAutoTopicCreation": False, "includeTopicAuthorizedOperations": False}
        )
        return {t["name"]: t["topicId"] for t in answer["topics"] if t["errorCode"] == 0}

    def close(self) -> None:
        self.sock.close()


def api_key(api: str) -> int:
    spec = lookup(api)
    if spec is None:
        raise ValueError(f"unknown API {api}")
    return spec.api_key


def routing_key(body: dict) -> str:
    """The id a JSON request is routed by (the group, transactional id or config resource; a share
    coordinator's request: its share-partition, `groupId:topicId:partition`)."""
    topics = body.get("topics") or []
    if body.get("groupId") and topics and "topicId" in topics[0] and topics[0].get("partitions"):
        first = topics[0]["partitions"][0]
        if isinstance(first, dict) and "partition" in first:
            return f"{body['groupId']}:{topics[0]['topicId']}:{first['partition']}"
    for name in ("groupId", "transactionalId"):
        if body.get(name):
            return body[name]
    for name, inner in (("groupIds", None), ("groups", "groupId"), ("resources", "resourceName")):
        items = body.get(name) or []
        if items:
            return items[0] if inner is None else items[0][inner]
    return ""


class ServiceTarget:
    """The service: through the gateway where it bridges the API, else the JSON envelope."""

    def __init__(self, gateway_bootstrap: str, json_client: CoordinatorClient):
        self.wire = KafkaWire(gateway_bootstrap, json_client.client_id)
        self.json = json_client

    def path(self, api: str) -> str:
        key = api_key(api)
        return "gateway" if key == FIND_COORDINATOR or bridged_spec(key) is not None else "json"

    def call(self, api: str, version: int, body: dict) -> dict:
        if self.path(api) == "gateway":
            return self.wire.call(api, version, body)
        answer = self.json.request(api, version, body, key=routing_key(body), timeout=60)
        # The JSON answer in the shape of the version asked (fields, defaults), as the wire's.
        key = api_key(api)
        return decode_response(encode_response(0, key, version, answer), key, version)[1]

    def close(self) -> None:
        self.wire.close()
        self.json.close()


class ReferenceTarget:
    def __init__(self, bootstrap: str, client_id: str):
        self.wire = KafkaWire(bootstrap, client_id)

    def path(self, api: str) -> str:
        return "broker"

    def call(self, api: str, version: int, body: dict) -> dict:
        return self.wire.call(api, version, body)

    def close(self) -> None:
        self.wire.close()


# ------------------------------------------------------------------ normalisation
_UUID_SUFFIX = re.compile(r"^(.*)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_PRODUCER_FIELDS = {"producerId"}
_NODE_FIELDS = {"nodeId", "host", "port"}
_TIME_FIELDS = {"throttleTimeMs", "transactionStartTimeMs", "currentStateTimestamp"}


@dataclass
class Names:
    """One side's placeholders: the n-th server-generated id seen becomes `<...#n>`, so the two
    sides' ids compare equal when they appear in the same order."""

    topic_ids: dict[str, str] = field(default_factory=dict)  # topic id -> name
    generated: dict[str, str] = field(default_factory=dict)
    producers: dict[int, str] = field(default_factory=dict)

    def member(self, value: str) -> str:
        m = _UUID_SUFFIX.match(value)
        if not m:
            return value
        if value not in self.generated:
            self.generated[value] = f"{m.group(1)}-<uuid#{len(self.generated) + 1}>"
        return self.generated[value]

    def producer(self, value: int) -> Any:
        if value < 0:
            return value
        return self.producers.setdefault(value, f"<producerId#{len(self.producers) + 1}>")


def normalise(value: Any, names: Names, api: str = "", key: str | None = None) -> Any:
    """The answer with what legitimately differs replaced, and lists in a canonical order (Kafka
    builds many of them from hash maps: the order carries no meaning)."""
    if isinstance(value, dict):
        if value.get("errorCode") and "producerId" in value:  # an error entry's id is the field's default
            return {k: v if k == "producerId" else normalise(v, names, api, k) for k, v in value.items()}
        return {k: normalise(v, names, api, k) for k, v in value.items()}
    if isinstance(value, list):
        items = [normalise(v, names, api, key) for v in value]
        return sorted(items, key=repr)
    if key in _TIME_FIELDS and isinstance(value, int) and value >= 0:
        return "<time>" if key != "throttleTimeMs" else 0
    if api == "FindCoordinator" and key in _NODE_FIELDS:
        return f"<{key}>"
    if key in _PRODUCER_FIELDS and isinstance(value, int):
        return names.producer(value)
    if isinstance(value, str):
        if value in names.topic_ids:
            return f"<topicId:{names.topic_ids[value]}>"
        group, _, rest = value.partition(":")
        tid, _, partition = rest.partition(":")
        if tid in names.topic_ids:  # a share-partition key, groupId:topicId:partition
            return f"{group}:<topicId:{names.topic_ids[tid]}>:{partition}"
        return names.member(value)
    return value


def differences(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, a's value, b's value) wherever two normalised answers differ; list indexes are shown
    as [*] in paths matched against documented deviations."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += differences(a.get(k), b.get(k), f"{path}.{k}" if path else k)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out += differences(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [(path, a, b)]


def generic_path(path: str) -> str:
    return re.sub(r"\[\d+\]", "[*]", path)
