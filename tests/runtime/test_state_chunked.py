"""State format 3: per-entity chunks read lazily, written back by what a batch touched."""

from __future__ import annotations

import json
import random
import re
import zlib

import pytest

import state
from coordinator import CoordinatorConfig, CoordinatorPartition, coordinator_partition
from coordinator.api import lookup
from coordinator.batch import InputRecord, run_batch
from coordinator.chunks import ChunkCorrupt, chunk_key
from coordinator.timers import PAGE_MAX, Timers
from state import chunked
from state.codec import FORMAT_CHUNKED, FORMAT_JSON, FORMAT_ZLIB_JSON, StoredState

PARTITION = 3
CONFIG = CoordinatorConfig()


def owned(prefix: str, n: int) -> list[str]:
    out, i = [], 0
    while len(out) < n:
        name = f"{prefix}-{i}"
        i += 1
        if coordinator_partition(name) == PARTITION:
            out.append(name)
    return out


GROUPS = owned("group", 40)
TXNS = owned("txn", 10)


def envelope(api: str, version: int, body: dict, cid: int) -> bytes:
    return json.dumps(
        {"apiKey": api, "apiVersion": version, "correlationId": cid, "clientId": "t", "request": body}
    ).encode()


def commit(group: str, offset: int) -> tuple[str, str, int, dict]:
    return (
        group,
        "OffsetCommit",
        9,
        {
            "groupId": group,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "groupInstanceId": None,
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {
                            "partitionIndex": p,
                            "committedOffset": offset + p,
                            "committedLeaderEpoch": -1,
                            "committedMetadata": "",
                        }
                        for p in range(3)
                    ],
                }
            ],
        },
    )


def init_pid(tid: str) -> tuple[str, str, int, dict]:
    return (
        tid,
        "InitProducerId",
        4,
        {"transactionalId": tid, "transactionTimeoutMs": 60000, "producerId": -1, "producerEpoch": -1},
    )


def records(requests, t: int, first_offset: int = 0) -> list[InputRecord]:
    """Internal APIs (UpdateMetadata) as the service's own channel delivers them."""
    return [
        InputRecord(
            key, envelope(api, v, body, first_offset + i), t, 0, first_offset + i, internal=lookup(api).internal
        )
        for i, (key, api, v, body) in enumerate(requests)
    ]


def populated() -> tuple[int, bytes]:
    """A format-3 state with GROUPS (3 offsets each) and TXNS."""
    part, _ = run_batch(
        lambda: CoordinatorPartition(PARTITION, CONFIG),
        records([commit(g, 100) for g in GROUPS] + [init_pid(t) for t in TXNS], 1_000),
        2_000,
    )
    return state.encode_partition(part)


def step(blob: tuple[int, bytes], requests, t: int, first_offset: int = 1000):
    stored = StoredState(*blob)
    part, out = run_batch(lambda: stored.load(PARTITION, CONFIG), records(requests, t, first_offset), t + 1)
    return part, out, state.encode_partition(part)


# ---------------------------------------------------------------------------- lazy decode
def test_a_batch_decodes_only_the_entities_it_touches():
    blob = populated()
    part, out, _ = step(blob, [commit(GROUPS[7], 500)], 3_000)
    assert out.responses[0].body["topics"][0]["partitions"][0]["errorCode"] == 0
    groups = part.component("groups")
    # Length and membership come from the index; only the committing group was decoded.
    assert len(groups.groups) == len(GROUPS) and GROUPS[8] in groups.groups
    assert groups.groups.touched() == 1 and groups.offsets.committed.touched() == 1
    assert part.component("transactions").txns.touched() == 0
    changed = set(part.dirty_chunks())
    entity_chunks = {k for k in changed if k[0] in "gotT"}
    assert entity_chunks == {chunk_key("GroupMetadata", GROUPS[7]), chunk_key("OffsetCommit", GROUPS[7])}


def test_untouched_chunks_are_copied_as_bytes_and_the_result_matches_a_full_decode():
    blob = populated()
    before = state.decode(*blob)
    _, _, new = step(blob, [commit(GROUPS[7], 500)], 3_000)
    after = state.decode(*new)
    committed = after["components"]["groups"]["offsets"]["committed"]
    assert committed[GROUPS[7]]["orders"]["0"][0] == 500
    for g in GROUPS:
        if g != GROUPS[7]:
            assert committed[g] == before["components"]["groups"]["offsets"]["committed"][g]
    old, fresh = chunked.ChunkReader(blob[1]), chunked.ChunkReader(new[1])
    # The untouched groups' stored bytes are the same bytes.
    key = chunk_key("OffsetCommit", GROUPS[8]).encode()
    assert old.text(key) == fresh.text(key)
    assert (
        old.payload[old.data_start : old.data_start + old.used]
        == fresh.payload[fresh.data_start : fresh.data_start + old.used]
    )


def test_a_read_only_request_leaves_the_entity_chunks_unchanged():
    blob = populated()
    fetch = (GROUPS[5], "OffsetFetch", 8, {"groups": [{"groupId": GROUPS[5], "topics": None}], "requireStable": False})
    part, out, new = step(blob, [fetch], 3_000)
    assert out.responses[0].body["groups"][0]["topics"][0]["partitions"][0]["committedOffset"] == 100
    old, fresh = chunked.ChunkReader(blob[1]), chunked.ChunkReader(new[1])
    # Only the partition chunk (its clock) and the metrics (the request counted) were rewritten.
    rewritten = (chunk_key("Partition"), chunk_key("Component", "metrics"))
    assert fresh.dead_bytes - old.dead_bytes == sum(len(k) + old.entry(old.find(k.encode()))[2] for k in rewritten)


def test_a_replayed_batch_writes_identical_bytes():
    blob = populated()
    requests = [commit(GROUPS[1], 7), init_pid(TXNS[2]), commit(GROUPS[30], 9)]
    _, out1, a = step(blob, requests, 5_000)
    _, out2, b = step(blob, requests, 5_000)
    assert a == b
    assert [r.body for r in out1.responses] == [r.body for r in out2.responses]


def test_every_load_starts_from_the_untouched_state():
    blob = populated()
    stored = StoredState(*blob)
    first = stored.load(PARTITION, CONFIG)
    first.component("groups").groups[GROUPS[0]].generation_id = 99
    del first.component("groups").offsets.committed[GROUPS[1]]
    second = stored.load(PARTITION, CONFIG)
    assert second.component("groups").groups[GROUPS[0]].generation_id == 0
    assert GROUPS[1] in second.component("groups").offsets.committed


# ---------------------------------------------------------------------------- old formats
@pytest.mark.parametrize("fmt", [FORMAT_JSON, FORMAT_ZLIB_JSON])
def test_old_formats_load_and_are_rewritten_in_format_3(fmt):
    blob = populated()
    snapshot = state.decode(*blob)
    old = state.encode(snapshot, fmt)
    assert old[0] == fmt
    part, _, new = step(old, [commit(GROUPS[3], 42)], 3_000)
    assert new[0] == FORMAT_CHUNKED
    # Same result as the same batch on the format-3 state.
    _, _, expected = step(blob, [commit(GROUPS[3], 42)], 3_000)
    assert state.decode(*new) == state.decode(*expected)
    # And the rewritten state loads lazily from then on.
    part, _, _ = step(new, [commit(GROUPS[4], 43)], 4_000)
    assert part.component("groups").groups.touched() == 1


def test_decode_of_format_3_is_the_full_snapshot():
    blob = populated()
    snap = state.decode(*blob)
    assert set(snap["components"]["groups"]["groups"]) == set(GROUPS)
    assert set(snap["components"]["transactions"]["transactions"]) == set(TXNS)
    assert state.decode(*state.encode(snap)) == snap


# ---------------------------------------------------------------------------- corruption
def _corrupt_chunk(payload: bytes, key: str) -> bytes:
    reader = chunked.ChunkReader(payload)
    off, klen, vlen = reader.entry(reader.find(key.encode()))
    start = reader.data_start + off + klen + 1  # past the flag byte
    damaged = bytearray(payload)
    for i in range(start, start + vlen - 1):
        damaged[i] ^= 0x5A
    return bytes(damaged)


def test_a_corrupt_chunk_fails_loudly_naming_it():
    fmt, payload = populated()
    damaged = _corrupt_chunk(payload, chunk_key("GroupMetadata", GROUPS[2]))
    part = StoredState(fmt, damaged).load(PARTITION, CONFIG)
    groups = part.component("groups").groups
    assert groups.get(GROUPS[3]) is not None  # other entities are fine
    with pytest.raises(ChunkCorrupt, match=re.escape(json.dumps(["GroupMetadata", GROUPS[2]]))):
        groups.get(GROUPS[2])
    with pytest.raises(ChunkCorrupt):  # never dropped from a full view either
        state.decode(fmt, damaged)
    assert GROUPS[2] in groups  # still listed: the index is intact


def test_a_chunk_that_decodes_to_the_wrong_shape_fails_loudly():
    blob = populated()
    reader = chunked.ChunkReader(blob[1])
    wrong = chunked.write(reader, {chunk_key("TransactionLog", TXNS[0]): {"producerId": 1}})
    part = StoredState(FORMAT_CHUNKED, wrong).load(PARTITION, CONFIG)
    with pytest.raises(ChunkCorrupt, match="TransactionLog"):
        part.component("transactions").txns.get(TXNS[0])


def test_a_truncated_payload_is_rejected():
    fmt, payload = populated()
    with pytest.raises(ValueError):
        StoredState(fmt, payload[: len(payload) // 2])


# ---------------------------------------------------------------------------- the container
def test_container_splicing_matches_a_model_through_compactions(monkeypatch):
    monkeypatch.setattr(chunked, "COMPACT_MIN_DEAD", 4096)
    rng = random.Random(7)
    model: dict[str, object] = {}
    reader = None
    compactions = 0
    for generation in range(120):
        changes = {}
        for _ in range(rng.randint(1, 40)):
            key = chunk_key("GroupMetadata", f"g{rng.randint(0, 300)}")
            if rng.random() < 0.25:
                changes[key] = None
            else:
                changes[key] = {"v": generation, "pad": rng.randbytes(rng.randint(0, 300)).hex()}
        payload = chunked.write(reader, changes)
        for k, v in changes.items():
            if v is None:
                model.pop(k, None)
            else:
                model[k] = v
        new_reader = chunked.ChunkReader(payload)
        if reader is not None and new_reader.dead_bytes < reader.dead_bytes:
            compactions += 1
        reader = new_reader
        assert dict(reader.items()) == model
        assert reader.count(chunk_key("GroupMetadata")) == len(model)
        assert list(reader.keys("g")) == sorted(model, key=lambda k: k.encode())
    assert compactions > 0


def test_unchanged_values_leave_the_payload_as_it_was():
    reader = chunked.ChunkReader(chunked.write(None, {chunk_key("GroupMetadata", "a"): {"x": 1}}))
    assert chunked.write(reader, {chunk_key("GroupMetadata", "a"): {"x": 1}}) is reader.payload


def test_large_payloads_keep_a_stable_size_class():
    big = {chunk_key("GroupMetadata", f"g{i}"): {"v": i, "pad": f"{i}" * 50} for i in range(3000)}
    reader = chunked.ChunkReader(chunked.write(None, big))
    grown = chunked.write(reader, {chunk_key("GroupMetadata", "g1"): {"v": -1, "pad": "y" * 70}})
    assert len(grown) == len(reader.payload) == chunked.size_class(len(reader.payload))
    assert chunked.ChunkReader(grown).get(chunk_key("GroupMetadata", "g1"))["v"] == -1


def test_zlib_chunks_use_the_fixed_dictionary():
    text = json.dumps({"type": "classic", "groupId": "g", "members": []}).encode() * 3
    packed = chunked._pack_value(text)
    assert packed[0] == chunked.ZLIB_DICT
    d = zlib.decompressobj(zdict=state.zdict.ZDICT_V1)
    assert d.decompress(packed[1:]) == text


# ---------------------------------------------------------------------------- timers
def test_paged_timers_match_a_model_and_survive_encoding():
    rng = random.Random(3)
    model: dict[str, tuple[int, int]] = {}  # key -> (deadline, seq)
    part = CoordinatorPartition(PARTITION, CONFIG)
    seq = 0
    for _ in range(3):
        for _ in range(2 * PAGE_MAX):
            key = f"k{rng.randint(0, 3 * PAGE_MAX)}"
            if rng.random() < 0.2:
                part.timers.cancel(key)
                model.pop(key, None)
            else:
                deadline = rng.choice([5_000, 10_000, rng.randint(0, 50_000)])
                part.timers.schedule(key, deadline, "groups-expiration", {"k": key})
                model[key] = (deadline, seq)
                seq += 1
        # Round trip through format 3, then keep going on the lazily loaded timers.
        part = StoredState(*state.encode_partition(part)).load(PARTITION, CONFIG)
        assert part.timers.next_deadline() == min(d for d, _ in model.values())
        assert part.timers.schedule_view() == {
            k: (d, "groups-expiration", {"k": k}) for k, (d, _) in sorted(model.items())
        }
    fired = []
    while (t := part.timers.pop_due(30_000)) is not None:
        fired.append(t.key)
    expected = sorted((k for k, (d, _) in model.items() if d <= 30_000), key=lambda k: model[k])
    assert fired == expected


def test_firing_one_timer_decodes_one_page_and_one_timer():
    timers = Timers()
    for i in range(10 * PAGE_MAX):
        timers.schedule(f"k{i}", 1_000 + i, "x")
    part = CoordinatorPartition(PARTITION, CONFIG)
    part.timers = timers
    loaded = StoredState(*state.encode_partition(part)).load(PARTITION, CONFIG)
    assert loaded.timers.next_deadline() == 1_000
    assert loaded.timers.pop_due(1_000).key == "k0"
    assert loaded.timers._by_key.touched() == 1 and loaded.timers._pages.touched() == 1


# ---------------------------------------------------------------------------- partition-wide parts
def test_topic_metadata_is_read_only_by_batches_that_use_it():
    topics = {"topicStates": [{"topicName": f"topic-{i}", "numPartitions": 4} for i in range(50)]}
    stored = StoredState(*populated())
    part, _ = run_batch(
        lambda: stored.load(PARTITION, CONFIG),
        records([("__coordinator_broadcast__", "UpdateMetadata", 0, topics)], 3_000),
        3_001,
    )
    blob = state.encode_partition(part)
    meta_key = chunk_key("Component", "metadata")
    assert state.decode(*blob)["components"]["metadata"]["available"]
    # A commit reads the metadata (KafkaApis checks that its topics exist) but does not rewrite
    # its chunk.
    part, _, _ = step(blob, [commit(GROUPS[0], 1)], 4_000)
    assert meta_key not in part.dirty_chunks()
    # AddPartitionsToTxn checks the partitions exist: it reads the metadata, without rewriting it.
    pid = state.decode(*blob)["components"]["transactions"]["transactions"][TXNS[0]]["producerId"]
    add = (
        TXNS[0],
        "AddPartitionsToTxn",
        3,
        {
            "v3AndBelowTransactionalId": TXNS[0],
            "v3AndBelowProducerId": pid,
            "v3AndBelowProducerEpoch": 0,
            "v3AndBelowTopics": [{"name": "topic-7", "partitions": [3, 4]}],
        },
    )
    part, out, new = step(blob, [add], 4_000)
    results = out.responses[0].body["resultsByTopicV3AndBelow"][0]["resultsByPartition"]
    assert [r["partitionErrorCode"] for r in results] == [55, 3]  # OPERATION_NOT_ATTEMPTED, UNKNOWN_TOPIC
    assert meta_key not in part.dirty_chunks()
    assert state.decode(*new)["components"]["metadata"]["topics"]["topic-7"] == 4
    # A changed UpdateMetadata rewrites it.
    topics["topicStates"].append({"topicName": "topic-new", "numPartitions": 1})
    part, _, new = step(new, [("__coordinator_broadcast__", "UpdateMetadata", 0, topics)], 5_000)
    assert meta_key in part.dirty_chunks()
    assert state.decode(*new)["components"]["metadata"]["topics"]["topic-new"] == 1


# ---------------------------------------------------------------------------- checkpoints mid-batch
def test_a_checkpoint_resumes_from_the_state_so_far_without_copying_the_payload():
    from coordinator.chunks import OverlaySource

    blob = populated()
    stored = StoredState(*blob)
    first, _ = run_batch(lambda: stored.load(PARTITION, CONFIG), records([commit(GROUPS[0], 700)], 3_000), 3_001)
    cp = first.checkpoint()
    assert isinstance(cp, OverlaySource) and cp.base is stored.reader
    # Changes after the checkpoint do not leak into it.
    first.component("groups").offsets.committed[GROUPS[0]]["orders"][0].committed_offset = -5
    resumed = CoordinatorPartition(PARTITION, CONFIG, chunks=cp)
    assert resumed.component("groups").offsets.get(GROUPS[0], "orders", 0).committed_offset == 700
    assert len(resumed.component("groups").groups) == len(GROUPS)
    second, _ = run_batch(
        lambda: CoordinatorPartition(PARTITION, CONFIG, chunks=resumed.checkpoint()),
        records([commit(GROUPS[1], 800), init_pid("new-" + TXNS[0])], 3_002, 50),
        3_003,
    )
    # Encoding the resumed partition equals running both batches in one.
    both, _ = run_batch(
        lambda: stored.load(PARTITION, CONFIG),
        records([commit(GROUPS[0], 700)], 3_000)
        + records([commit(GROUPS[1], 800), init_pid("new-" + TXNS[0])], 3_002, 50),
        3_003,
    )
    # (Except the metrics, which count the batches.)
    assert _without_metrics(state.decode(*state.encode_partition(second))) == _without_metrics(
        state.decode(*state.encode_partition(both))
    )


def _without_metrics(snapshot: dict) -> dict:
    snapshot["components"].pop("metrics")
    return snapshot
