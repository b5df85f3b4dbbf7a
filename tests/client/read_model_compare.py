"""Compare the Redis read model with the coordinator's own Describe answers (unit and e2e tests)."""

from __future__ import annotations

from coordinator.group.classic.consumer_protocol import decode_assignment


def _tps(entries, name_key="topic") -> list[dict]:
    return sorted(
        ({"topic": e[name_key], "partitions": sorted(e["partitions"])} for e in entries if e["partitions"]),
        key=lambda e: e["topic"],
    )


def _group_differences(model: dict | None, described: dict, expect: dict, member_fields, assignment_of) -> list[str]:
    """What classic and consumer groups compare alike: the group's fields (`expect`), the member
    ids, each member's fields (model name, answer name) and assignment (`assignment_of(described
    member)` -> the wanted topic-partitions, or None to skip)."""
    if model is None:
        return [f"group {described['groupId']} missing from the read model"]
    diffs = [f"{k}: model {model[k]!r}, coordinator {v!r}" for k, v in expect.items() if model[k] != v]
    got = {m["memberId"]: m for m in model["members"]}
    if set(got) != {m["memberId"] for m in described["members"]}:
        diffs.append(f"members: model {sorted(got)}, coordinator {sorted(m['memberId'] for m in described['members'])}")
        return diffs
    for d in described["members"]:
        m = got[d["memberId"]]
        for ours, theirs in member_fields:
            if m[ours] != d[theirs]:
                diffs.append(f"member {d['memberId']} {ours}: model {m[ours]!r}, coordinator {d[theirs]!r}")
        want = assignment_of(d)
        if want is not None and _tps(m["assignment"] or []) != want:
            diffs.append(f"member {d['memberId']} assignment: model {m['assignment']}, coordinator {want}")
    return diffs


def classic_differences(model: dict | None, described: dict) -> list[str]:
    """A DescribeGroups group (errorCode 0) against the model's group hash; [] when they agree."""
    expect = {"type": "classic", "state": described["groupState"], "protocolType": described["protocolType"]}
    if described["groupState"] == "Stable":
        expect["protocol"] = described["protocolData"]

    def assignment_of(d: dict):
        if described["protocolType"] != "consumer" or not d["memberAssignment"]:
            return None
        return _tps(
            [{"topic": t, "partitions": p} for t, p in decode_assignment(d["memberAssignment"]).as_dict().items()]
        )

    return _group_differences(
        model,
        described,
        expect,
        (("groupInstanceId", "groupInstanceId"), ("clientId", "clientId"), ("clientHost", "clientHost")),
        assignment_of,
    )


def consumer_differences(model: dict | None, described: dict) -> list[str]:
    """A ConsumerGroupDescribe group (errorCode 0) against the model's group hash."""
    expect = {
        "type": "consumer",
        "state": described["groupState"],
        "generation": described["groupEpoch"],
        "assignmentEpoch": described["assignmentEpoch"],
        "protocol": described["assignorName"],
    }
    return _group_differences(
        model,
        described,
        expect,
        (
            ("groupInstanceId", "instanceId"),
            ("clientId", "clientId"),
            ("clientHost", "clientHost"),
            ("memberEpoch", "memberEpoch"),
            ("subscribedTopicNames", "subscribedTopicNames"),
        ),
        lambda d: _tps(d["assignment"]["topicPartitions"], "topicName"),
    )


def offsets_differences(model: dict, fetched_topics: list[dict]) -> list[str]:
    """OffsetFetch's topics (one group, v8+ shape) against ReadModel.offsets(group)."""
    want = {}
    for t in fetched_topics:
        for p in t["partitions"]:
            if p["errorCode"] == 0 and p["committedOffset"] >= 0:
                want[(t["name"], p["partitionIndex"])] = (
                    p["committedOffset"],
                    p["committedLeaderEpoch"],
                    p["metadata"],
                )
    got = {k: (v["committedOffset"], v["committedLeaderEpoch"], v["metadata"]) for k, v in model.items()}
    return [] if got == want else [f"offsets: model {got}, coordinator {want}"]


def txn_differences(model: dict | None, described: dict) -> list[str]:
    """A DescribeTransactions entry (errorCode 0) against the model's transaction hash."""
    if model is None:
        return [f"transaction {described['transactionalId']} missing from the read model"]
    expect = {
        "state": described["transactionState"],
        "producerId": described["producerId"],
        "producerEpoch": described["producerEpoch"],
        "timeoutMs": described["transactionTimeoutMs"],
        "startTimestamp": described["transactionStartTimeMs"],
    }
    diffs = [f"{k}: model {model[k]!r}, coordinator {v!r}" for k, v in expect.items() if model[k] != v]
    if _tps(model["partitions"]) != _tps(described["topics"]):
        diffs.append(f"partitions: model {model['partitions']}, coordinator {described['topics']}")
    return diffs
