"""Hostile request records, generated from a seed (deterministic), mixed with well-formed requests
whose right answers are known. Used by the core's property tests, the service fuzz test
(tests/integration/test_fuzz_service.py) and the larger drill (bench/fuzz_service.py).

A hostile record is bytes of any kind in key and value, JSON of every shape, a valid envelope with
one field replaced by a hostile value, the reserved broadcast key, every form of replyTo, an
internal API, a truncated or oversized value.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from coordinator import coordinator_partition
from coordinator.envelope import BROADCAST_KEY

HOSTILE_STRINGS = [
    "",
    " ",
    "\x00",
    "\ud800",
    "a\udfffb",
    "\u202e\u2066",
    "😀" * 50,
    "\n\r\t",
    "..",
    ".",
    "x" * 300,
    "k" * 40_000,
    "__consumer_offsets",
    "__transaction_state",
    "bad topic!",
    "../../etc",
    "%s%n",
    "\\u0000",
    '"}',
    "null",
    "\uffff",
    "é" * 17_000,
]
API_NAMES = [
    "FindCoordinator",
    "JoinGroup",
    "SyncGroup",
    "Heartbeat",
    "LeaveGroup",
    "OffsetCommit",
    "OffsetFetch",
    "OffsetDelete",
    "DescribeGroups",
    "ListGroups",
    "DeleteGroups",
    "ConsumerGroupHeartbeat",
    "ConsumerGroupDescribe",
    "InitProducerId",
    "AddPartitionsToTxn",
    "AddOffsetsToTxn",
    "EndTxn",
    "TxnOffsetCommit",
    "DescribeTransactions",
    "ListTransactions",
    "WriteTxnMarkers",
    "UpdateMetadata",
    "TxnVerification",
    "TxnVerificationResult",
    "TxnOffsetsAdded",
    "NoSuchApi",
    "StreamsGroupHeartbeat",
    "StreamsGroupDescribe",
    "ShareGroupHeartbeat",
    "ShareGroupDescribe",
    "InitializeShareGroupState",
    "ReadShareGroupState",
    "WriteShareGroupState",
    "DeleteShareGroupState",
    "ReadShareGroupStateSummary",
    "DescribeShareGroupOffsets",
    "AlterShareGroupOffsets",
    "DeleteShareGroupOffsets",
    "ShareStateSummaryQuery",
    "ShareStateSummaryAnswer",
    "ShareEndOffsetsAnswer",
]


@dataclass
class Corpus:
    records: list[tuple[bytes | None, bytes | None]] = field(default_factory=list)  # (key, value)
    # correlationId -> a predicate on the response body, for the well-formed requests
    expected: dict[int, tuple[str, object]] = field(default_factory=dict)
    commits: dict[tuple[str, int], int] = field(default_factory=dict)  # (group, partition) -> last offset
    client_id: str = "fuzz-client"


class HostileRecords:
    def __init__(
        self, seed: int, topics: dict[str, str] | None = None, partitions: int = 50, max_value_bytes: int = 20_000
    ):
        self.rng = random.Random(seed)
        self.seed = seed
        self.topics = {k: v for k, v in (topics or {}).items() if isinstance(v, str)}  # names only
        self.partitions = partitions
        self.max_value_bytes = max_value_bytes
        self.next_cid = 1

    # ------------------------------------------------------------------ pieces
    def string(self) -> str:
        r = self.rng.random()
        if r < 0.4:
            return self.rng.choice(HOSTILE_STRINGS)
        if r < 0.5:
            return self.rng.choice(list(self.topics.values()) or ["coordinator-state-log"])
        n = self.rng.randint(0, 40)
        return "".join(
            chr(
                self.rng.choice(
                    [
                        self.rng.randint(0, 0x7F),
                        self.rng.randint(0x80, 0xD7FF),
                        self.rng.randint(0xD800, 0xDFFF),
                        self.rng.randint(0xE000, 0x10FFFF),
                    ]
                )
            )
            for _ in range(n)
        )

    def json_value(self, depth: int = 0):
        kinds = ["int", "bigint", "float", "str", "bool", "null", "list", "dict"]
        kind = self.rng.choice(kinds if depth < 4 else kinds[:6])
        if kind == "int":
            return self.rng.choice([0, -1, 1, 2**31 - 1, -(2**31), 2**31, 2**63, -(2**63) - 1, 32767, 65536])
        if kind == "bigint":
            return int("9" * self.rng.randint(20, 400))
        if kind == "float":
            return self.rng.choice([0.5, -1e308, 1e308, 3.0])
        if kind == "str":
            return self.string()
        if kind == "bool":
            return self.rng.random() < 0.5
        if kind == "null":
            return None
        if kind == "list":
            return [self.json_value(depth + 1) for _ in range(self.rng.randint(0, 6))]
        return {
            self.rng.choice(
                ["groupId", "memberId", "topics", "key", "keyType", "protocols", "name", "partitions", self.string()]
            ): self.json_value(depth + 1)
            for _ in range(self.rng.randint(0, 6))
        }

    def reply_to(self):
        forms = [None, None, "bad topic!", "__consumer_offsets", "", "x" * 300, 17, [], {"a": 1}, "\ud800"]
        forms += list(self.topics.values())
        if "responses" in self.topics:
            forms += [self.topics["responses"] + ".nowhere", self.topics["responses"] + ".."]
        return self.rng.choice(forms)

    def key(self) -> bytes | None:
        r = self.rng.random()
        if r < 0.15:
            return None
        if r < 0.3:
            return bytes(self.rng.randint(0, 255) for _ in range(self.rng.randint(1, 40)))
        if r < 0.4:
            return BROADCAST_KEY.encode()
        if r < 0.45:
            return b"\xff" * self.rng.randint(1, 70_000)
        return self.string().encode("utf-8", "surrogatepass")

    # ------------------------------------------------------------------ records
    def hostile(self) -> tuple[bytes | None, bytes | None]:
        kind = self.rng.randrange(7)
        key = self.key()
        if kind == 0:  # bytes of any kind
            return key, bytes(self.rng.randint(0, 255) for _ in range(self.rng.randint(0, 300)))
        if kind == 1:  # JSON of any shape
            return key, json.dumps(self.json_value()).encode()
        if kind == 2:  # nothing at all
            return key, self.rng.choice([None, b"", b"{}", b"[]", b"null", b"1e999999", b'{"a":' * 5000])
        if kind == 3:  # too large
            return key, b'{"correlationId": 7, "pad": "' + b"p" * self.rng.randint(
                self.max_value_bytes, 2 * self.max_value_bytes
            ) + b'"}'
        envelope = {
            "apiKey": self.rng.choice(API_NAMES),
            "apiVersion": self.rng.randint(-1, 12),
            "correlationId": self.cid(),
            "clientId": self.string(),
            "replyTo": self.reply_to(),
            "request": self.json_value(),
        }
        if kind == 4:  # one envelope field hostile
            envelope[self.rng.choice(list(envelope))] = self.json_value()
        raw = json.dumps(envelope, ensure_ascii=self.rng.random() < 0.5).encode("utf-8", "surrogatepass")
        if kind == 5:  # truncated
            raw = raw[: self.rng.randint(0, len(raw))]
        return key, raw

    def cid(self) -> int:
        self.next_cid += 1
        return self.next_cid

    def well_formed(self, corpus: Corpus) -> tuple[bytes, bytes]:
        cid = self.cid()
        group = f"fuzz-{self.seed}-group-{self.rng.randrange(12)}"
        if self.rng.random() < 0.5:
            key = self.rng.choice([group, "支付组", "😀-group", "g" * 200, f"tx-{self.rng.randrange(99)}"])
            body = {"keyType": self.rng.randint(0, 1), "coordinatorKeys": [key]}
            corpus.expected[cid] = ("FindCoordinator", coordinator_partition(key, self.partitions))
            return key.encode(), self.envelope(cid, "FindCoordinator", 4, body, corpus)
        partition, offset = self.rng.randrange(4), cid
        corpus.commits[(group, partition)] = offset
        corpus.expected[cid] = ("OffsetCommit", 0)
        body = {
            "groupId": group,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "groupInstanceId": None,
            "topics": [
                {
                    "name": "fuzz-topic",
                    "partitions": [
                        {
                            "partitionIndex": partition,
                            "committedOffset": offset,
                            "committedLeaderEpoch": -1,
                            "committedMetadata": f"m{offset}",
                        }
                    ],
                }
            ],
        }
        return group.encode(), self.envelope(cid, "OffsetCommit", 9, body, corpus)

    @staticmethod
    def envelope(cid: int, api: str, version: int, body: dict, corpus: Corpus) -> bytes:
        return json.dumps(
            {"apiKey": api, "apiVersion": version, "correlationId": cid, "clientId": corpus.client_id, "request": body}
        ).encode()

    def corpus(self, hostile: int, good: int, client_id: str = "fuzz-client") -> Corpus:
        corpus = Corpus(client_id=client_id)
        kinds = [True] * good + [False] * hostile
        self.rng.shuffle(kinds)
        for is_good in kinds:
            corpus.records.append(self.well_formed(corpus) if is_good else self.hostile())
        return corpus


def check_answer(expected: tuple[str, object], response: dict) -> None:
    api, want = expected
    if api == "FindCoordinator":
        [c] = response["coordinators"]
        assert c["errorCode"] == 0 and c["nodeId"] == want, response
    else:
        assert [p["errorCode"] for t in response["topics"] for p in t["partitions"]] == [0], response
