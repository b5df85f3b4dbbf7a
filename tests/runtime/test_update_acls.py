"""UpdateAcls, the broker's ACLs on the internal channel (coordinator/acl_state.py): taken only from
the ACL publisher's signed, stamped records; a replayed or older one is dropped; the snapshot lives
in the partition's state (it survives the encoding round trip and a restart); a principal's request
before the first snapshot is answered as Kafka's authorizer that has not loaded yet."""

from __future__ import annotations

import json

from coordinator import CoordinatorConfig, CoordinatorPartition, coordinator_partition
from coordinator.acl import AclOperation, ResourceType
from coordinator.acl_state import ACL_PUBLISHER, AclSnapshot, stored_snapshot
from coordinator.envelope import BROADCAST_KEY
from coordinator.errors import Errors
from tests.core_driver import CoreDriver
from tests.runtime.test_internal_channel import Stored, broadcast

CONFIG = CoordinatorConfig()
OWNER = coordinator_partition(BROADCAST_KEY, 50)


def acl(rt=3, name="g", pt=3, principal="User:alice", host="*", op=3, perm=3) -> dict:
    return {
        "resourceType": rt,
        "resourceName": name,
        "patternType": pt,
        "principal": principal,
        "host": host,
        "operation": op,
        "permissionType": perm,
    }


def update_acls(acls: list[dict], super_users=("User:admin",), allow_if_none=False, cid: int = 1) -> bytes:
    return json.dumps(
        {
            "apiKey": "UpdateAcls",
            "apiVersion": 0,
            "correlationId": cid,
            "clientId": "coordinator-acl-publisher",
            "request": {"acls": acls, "superUsers": list(super_users), "allowEveryoneIfNoAclFound": allow_if_none},
        }
    ).encode()


def publish(d: CoreDriver, acls: list[dict], seq: int, epoch: int = 1, publisher: str = ACL_PUBLISHER, **kw):
    return d.send_raw(update_acls(acls, **kw), key=BROADCAST_KEY, internal=True, stamp=(publisher, epoch, seq))


def test_the_snapshot_is_kept_in_state_and_survives_the_encoding_round_trip():
    s = Stored(OWNER)
    part, out = s.batch([broadcast(update_acls([acl(), acl(rt=2, name="t", op=8)]), 0, (ACL_PUBLISHER, 1, 0))])
    assert [e.body for e in out.events if e.body["event"] == "AclsUpdated"][0]["acls"] == 2
    part, _ = s.batch([], 11_000)  # a new batch: the partition decoded from the encoded state
    acls = part.component("acls")
    assert acls.ready and acls.stored["superUsers"] == ["User:admin"]
    authorizer = acls.authorizer()
    assert authorizer.authorize("User:alice", "10.0.0.1", AclOperation.READ, ResourceType.GROUP, "g")
    assert not authorizer.authorize("User:bob", "10.0.0.1", AclOperation.READ, ResourceType.GROUP, "g")
    assert authorizer.authorize("User:alice", "10.0.0.1", AclOperation.DESCRIBE, ResourceType.TOPIC, "t")
    # The full snapshot (formats 1-2) round trip too.
    again = CoordinatorPartition(OWNER, CONFIG, snapshot=json.loads(json.dumps(part.to_json())))
    assert again.component("acls").stored == acls.stored


def test_a_partition_without_a_snapshot_stores_nothing_and_is_not_ready():
    s = Stored(7)
    part, _ = s.batch([])
    part, _ = s.batch([], 11_000)
    assert not part.component("acls").ready and part.component("acls").authorizer() is None
    assert part.component("acls").to_json() == {}


def test_a_replayed_or_older_update_acls_is_dropped_and_the_newer_snapshot_stays():
    s = Stored(OWNER)
    old, new = update_acls([acl()]), update_acls([acl(principal="User:bob")], cid=2)
    s.batch([broadcast(old, 0, (ACL_PUBLISHER, 1, 0)), broadcast(new, 1, (ACL_PUBLISHER, 1, 1))])
    part, out = s.batch([broadcast(old, 2, (ACL_PUBLISHER, 1, 0))], 11_000)  # the old record, copied
    assert [e.body["event"] for e in out.events] == ["ReplayedInternalRecord"]
    assert part.component("acls").stored["acls"][0][3] == "User:bob"
    part, out = s.batch([broadcast(old, 3, None)], 12_000)  # unstamped, after stamped ones
    assert [e.body["event"] for e in out.events] == ["ReplayedInternalRecord"]
    assert part.component("acls").stored["acls"][0][3] == "User:bob"
    # A restarted publisher (a new epoch) is taken.
    part, _ = s.batch([broadcast(old, 4, (ACL_PUBLISHER, 2, 0))], 13_000)
    assert part.component("acls").stored["acls"][0][3] == "User:alice"


def test_update_acls_from_another_publisher_or_unstamped_is_refused():
    d = CoreDriver(partition=OWNER)
    publish(d, [acl()], 0, publisher="metadata-publisher")
    [forged] = d.events_named("ForgedInternalRecord")
    assert "acl-publisher" in forged["reason"]
    d.send_raw(update_acls([acl()]), key=BROADCAST_KEY, internal=True)  # unstamped
    assert not d.component("acls").ready
    publish(d, [acl()], 0)
    assert d.component("acls").ready


def test_update_acls_on_the_request_topic_is_refused_cluster_authorization_failed():
    d = CoreDriver(partition=OWNER)
    out = d.send_raw(update_acls([acl()]), key="k", internal=False)
    [response] = out.responses
    assert response.body["errorCode"] == Errors.CLUSTER_AUTHORIZATION_FAILED.code
    assert not d.component("acls").ready


def test_unknown_codes_refuse_the_snapshot_and_unchecked_resource_types_are_left_out():
    stored, problem = stored_snapshot(
        {"acls": [acl(rt=7, name="User:x"), acl(rt=99)], "superUsers": [], "allowEveryoneIfNoAclFound": False}
    )
    assert problem is None and stored["acls"] == []  # USER and an unknown type: never checked here
    stored, problem = stored_snapshot({"acls": [acl(op=1)], "superUsers": [], "allowEveryoneIfNoAclFound": False})
    assert stored is None and "ACL" in problem  # ANY is a filter, not an ACL's operation
    d = CoreDriver(partition=OWNER)
    publish(d, [acl()], 0)
    publish(d, [acl(perm=1)], 1)
    assert d.events_named("AclSnapshotRefused") and d.component("acls").stored["acls"][0][6] == 3


def test_the_same_snapshot_again_changes_nothing_and_the_authorizer_is_shared():
    d = CoreDriver(partition=OWNER)
    publish(d, [acl()], 0)
    first = d.component("acls").authorizer()
    publish(d, [acl()], 1)
    assert len(d.events_named("AclsUpdated")) == 1
    assert d.component("acls").authorizer() is first


def test_a_principal_before_the_first_snapshot_is_answered_not_ready_retriable():
    d = CoreDriver("g")
    body = {"groupId": "g", "generationId": 1, "memberId": "m", "groupInstanceId": None}
    r = d.send("Heartbeat", 4, body, principal="User:alice", client_host="/127.0.0.1")
    assert r["errorCode"] == Errors.COORDINATOR_LOAD_IN_PROGRESS.code
    # The JSON path (no principal) is not authorised by ACLs.
    r = d.send("Heartbeat", 4, body)
    assert r["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code


def test_acl_snapshot_component_is_registered():
    assert CoordinatorPartition(0, CONFIG).components["acls"].__class__ is AclSnapshot
