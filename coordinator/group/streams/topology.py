"""A streams group's topology (Kafka's StreamsTopology, kept as the StreamsGroupTopology record
value) and its configuration against the broker's topics (InternalTopicManager.configureTopics ->
ConfiguredTopology).

The topology is stored as the record value: {"epoch", "subtopologies": [{subtopologyId,
sourceTopics, sourceTopicRegex, stateChangelogTopics: [TopicInfo], repartitionSinkTopics,
repartitionSourceTopics: [TopicInfo], copartitionGroups: [{sourceTopics, sourceTopicRegex,
repartitionSourceTopics} (indexes)]}]} with TopicInfo = {name, partitions, replicationFactor,
topicConfigs: [{key, value}]}, the field names of StreamsGroupTopologyValue.json.

Configuring a topology decides the partition count of every internal topic (repartition topics
from their sources, copartition groups, changelog topics = their subtopology's task count) and
reports, in Kafka's order and wording, the first problem as a status
(`StreamsGroupHeartbeatResponse.Status`): MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS, or
MISSING_INTERNAL_TOPICS with the internal topics to create. An invalid topology (a repartition
topic never written, a cycle) is STREAMS_INVALID_TOPOLOGY.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..group import IllegalStateError

# StreamsGroupHeartbeatResponse.Status
STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS = 0, 1, 2
MISSING_INTERNAL_TOPICS, SHUTDOWN_APPLICATION = 3, 4
ASSIGNMENT_DELAYED, MISSING_CLIENT_TAGS = 5, 6  # MISSING_CLIENT_TAGS: StreamsGroupHeartbeat v1 only


class TopicConfigurationError(Exception):
    """TopicConfigurationException: the topology cannot be configured yet (a status, not an error)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class StreamsInvalidTopologyError(Exception):
    """StreamsInvalidTopologyException (error STREAMS_INVALID_TOPOLOGY)."""


def _topic_info(t: Mapping) -> dict:
    return {
        "name": t["name"],
        "partitions": int(t.get("partitions", 0)),
        "replicationFactor": int(t.get("replicationFactor", 0)),
        "topicConfigs": [
            {"key": c.get("key", c.get("Key")), "value": c.get("value", c.get("Value"))}
            for c in (t.get("topicConfigs") or [])
        ],
    }


def topology_record_value(topology: Mapping) -> dict:
    """StreamsTopology.fromHeartbeatRequest / convertToStreamsGroupTopologyRecord: the request's
    topology as the record value (subtopologies sorted by id, as Kafka keys them in a map)."""
    subs = []
    for s in sorted(topology["subtopologies"], key=lambda s: s["subtopologyId"]):
        subs.append(
            {
                "subtopologyId": s["subtopologyId"],
                "sourceTopics": list(s.get("sourceTopics") or []),
                "sourceTopicRegex": list(s.get("sourceTopicRegex") or []),
                "stateChangelogTopics": [_topic_info(t) for t in s.get("stateChangelogTopics") or []],
                "repartitionSinkTopics": list(s.get("repartitionSinkTopics") or []),
                "repartitionSourceTopics": [_topic_info(t) for t in s.get("repartitionSourceTopics") or []],
                "copartitionGroups": [
                    {
                        "sourceTopics": list(g.get("sourceTopics") or []),
                        "sourceTopicRegex": list(g.get("sourceTopicRegex") or []),
                        "repartitionSourceTopics": list(g.get("repartitionSourceTopics") or []),
                    }
                    for g in s.get("copartitionGroups") or []
                ],
            }
        )
    return {"epoch": int(topology["epoch"]), "subtopologies": subs}


def required_topics(topology: Mapping) -> set[str]:
    """StreamsTopology.requiredTopics: source, repartition source and changelog topics."""
    out: set[str] = set()
    for s in topology["subtopologies"]:
        out.update(s["sourceTopics"])
        out.update(t["name"] for t in s["repartitionSourceTopics"])
        out.update(t["name"] for t in s["stateChangelogTopics"])
    return out


def source_topic_map(topology: Mapping) -> dict[str, str]:
    """StreamsTopology.sourceTopicMap: each source and repartition source topic -> the id of the
    subtopology reading it."""
    out: dict[str, str] = {}
    for s in topology["subtopologies"]:
        for name in [*s["sourceTopics"], *(t["name"] for t in s["repartitionSourceTopics"])]:
            out[name] = s["subtopologyId"]
    return out


@dataclass(frozen=True)
class ConfiguredSubtopology:
    number_of_tasks: int
    source_topics: frozenset
    repartition_source_topics: Mapping[str, int]  # name -> partitions
    repartition_sink_topics: frozenset
    state_changelog_topics: Mapping[str, int]

    def is_stateful(self) -> bool:
        return bool(self.state_changelog_topics)


@dataclass(frozen=True)
class ConfiguredTopology:
    topology_epoch: int
    metadata_hash: int
    subtopologies: Mapping[str, ConfiguredSubtopology] | None  # None: not configured
    internal_topics_to_create: Mapping[str, dict] = field(default_factory=dict)
    status: int | None = None
    status_detail: str | None = None

    def is_ready(self) -> bool:
        """Kafka's isReady: configured, and no problem reported."""
        return self.status is None and self.subtopologies is not None

    def as_describe_topology(self) -> dict:
        """ConfiguredTopology.asStreamsGroupDescribeTopology."""
        subs = []
        subtopologies = self.subtopologies or {}
        for sid in sorted(subtopologies):
            s = subtopologies[sid]
            subs.append(
                {
                    "subtopologyId": sid,
                    "sourceTopics": sorted(s.source_topics),
                    "repartitionSinkTopics": sorted(s.repartition_sink_topics),
                    "stateChangelogTopics": [
                        _describe_topic(n, p) for n, p in sorted(s.state_changelog_topics.items())
                    ],
                    "repartitionSourceTopics": [
                        _describe_topic(n, p) for n, p in sorted(s.repartition_source_topics.items())
                    ],
                }
            )
        return {"epoch": self.topology_epoch, "subtopologies": subs}


def describe_stored_topology(topology: Mapping) -> dict:
    """StreamsTopology.asStreamsGroupDescribeTopology: the topology of the group's record, as the
    member sent it (partitions not yet resolved), subtopologies and topics in name order."""
    subs = []
    for s in sorted(topology["subtopologies"], key=lambda s: s["subtopologyId"]):
        subs.append(
            {
                "subtopologyId": s["subtopologyId"],
                "sourceTopics": sorted(s.get("sourceTopics") or []),
                "repartitionSinkTopics": sorted(s.get("repartitionSinkTopics") or []),
                "stateChangelogTopics": sorted(
                    (_topic_info(t) for t in s.get("stateChangelogTopics") or []), key=lambda t: t["name"]
                ),
                "repartitionSourceTopics": sorted(
                    (_topic_info(t) for t in s.get("repartitionSourceTopics") or []), key=lambda t: t["name"]
                ),
            }
        )
    return {"epoch": topology["epoch"], "subtopologies": subs}


def _describe_topic(name: str, partitions: int) -> dict:
    return {"name": name, "partitions": partitions, "replicationFactor": 0, "topicConfigs": []}


def configure_topics(topology: Mapping, metadata_hash: int, topics: Mapping[str, int]) -> ConfiguredTopology:
    """InternalTopicManager.configureTopics. `topics`: the broker's topics -> partition counts.
    Raises StreamsInvalidTopologyError for a topology that can never be configured."""
    subs = topology["subtopologies"]
    epoch = topology["epoch"]
    try:
        _throw_on_missing_source_topics(subs, topics)
        decided = _decide_partition_counts(subs, topics)
        configured = {s["subtopologyId"]: _configured_subtopology(s, topics, decided) for s in subs}
        to_create = _missing_internal_topics(configured, topology, topics)
        if to_create:
            return ConfiguredTopology(
                epoch,
                metadata_hash,
                configured,
                to_create,
                MISSING_INTERNAL_TOPICS,
                f"Internal topics are missing: {_summarize_topics(to_create)}",
            )
        return ConfiguredTopology(epoch, metadata_hash, configured)
    except TopicConfigurationError as e:
        return ConfiguredTopology(epoch, metadata_hash, None, {}, e.status, str(e))


def _java_set(names) -> str:
    return "[" + ", ".join(sorted(names)) + "]"


def _summarize_topics(names) -> str:
    """InternalTopicManager.summarizeTopics (Kafka 4.2+): at most three names, then how many more
    (4.1.1 printed the whole Java set, in brackets). Kafka's order is its collection's (a HashMap's
    key set for the internal topics): sorted here."""
    names = sorted(names)
    if not names:
        return "<none>"
    more = f" and {len(names) - 3} additional topics" if len(names) > 3 else ""
    return ", ".join(names[:3]) + more


def _throw_on_missing_source_topics(subs, topics) -> None:
    missing = sorted({t for s in subs for t in s["sourceTopics"] if t not in topics})
    if missing:
        raise TopicConfigurationError(MISSING_SOURCE_TOPICS, f"Source topics {_summarize_topics(missing)} are missing.")


def _partition_count(topics: Mapping[str, int], decided: Mapping[str, int]) -> Callable[[str], int | None]:
    def count(topic: str) -> int | None:
        if topic in topics:
            return topics[topic]
        return decided.get(topic)

    return count


def _decide_partition_counts(subs, topics) -> dict[str, int]:
    decided: dict[str, int] = {}
    count = _partition_count(topics, decided)
    decided.update(_repartition_topics_setup(subs, count))
    _enforce_copartitioning(subs, decided, count)
    decided.update(_changelog_topics_setup(subs, count))
    return decided


def _repartition_topics_setup(subs, count) -> dict[str, int]:
    """RepartitionTopics.setup."""
    missing = set()
    for s in subs:
        external = set(s["sourceTopics"]) - {t["name"] for t in s["repartitionSourceTopics"]}
        missing |= {t for t in external if count(t) is None}
    if missing:
        raise IllegalStateError(f"Missing source topics: {', '.join(sorted(missing))}")
    counts = {t["name"]: t["partitions"] for s in subs for t in s["repartitionSourceTopics"] if t["partitions"]}
    while True:
        needed = progress = False
        for s in subs:
            for sink in s["repartitionSinkTopics"]:
                if sink in counts:
                    continue
                n = _compute_partition_count(counts, s, count)
                if n is None:
                    needed = True
                else:
                    counts[sink] = n
                    progress = True
        if not progress and needed:
            raise StreamsInvalidTopologyError(
                "Failed to compute number of partitions for all repartition topics. "
                "There may be loops in the topology that cannot be resolved."
            )
        if not needed:
            break
    for s in subs:
        if any(t["name"] not in counts for t in s["repartitionSourceTopics"]):
            raise StreamsInvalidTopologyError(
                "Failed to compute number of partitions for all repartition topics, "
                "because a repartition source topic is never used as a sink topic."
            )
    return counts


def _compute_partition_count(counts, s, count) -> int | None:
    best = None
    for t in s["repartitionSourceTopics"]:
        n = counts.get(t["name"])
        if n is not None and (best is None or n > best):
            best = n
    for t in s["sourceTopics"]:
        n = count(t)
        if n is not None and (best is None or n > best):
            best = n
    return best


def _enforce_copartitioning(subs, decided: dict, count) -> None:
    fixed = {t["name"] for s in subs for t in s["repartitionSourceTopics"] if t["partitions"] != 0}
    flexible = {t["name"] for s in subs for t in s["repartitionSourceTopics"] if t["partitions"] == 0}
    for s in subs:
        for g in s["copartitionGroups"]:
            group = {s["sourceTopics"][i] for i in g["sourceTopics"]}
            group |= {s["repartitionSourceTopics"][i]["name"] for i in g["repartitionSourceTopics"]}
            decided.update(_enforce(group, fixed, flexible, count))


def _get_count(count, topic: str) -> int:
    n = count(topic)
    if n is None:
        raise IllegalStateError(f"Number of partitions is not set for topic: {topic}")
    return n


def _map_str(m: Mapping[str, int]) -> str:
    """Java's TreeMap.toString: {a=1, b=2}."""
    return "{" + ", ".join(f"{k}={m[k]}" for k in sorted(m)) + "}"


def _enforce(group: set, fixed: set, flexible: set, count) -> dict[str, int]:
    """CopartitionedTopicsEnforcer.enforce."""
    if not group:
        return {}
    repartition = {t: _get_count(count, t) for t in group if t in fixed or t in flexible}
    others = {t: _get_count(count, t) for t in group if t not in repartition}
    if set(repartition) == group:
        if fixed:
            first = next(iter(sorted(fixed)))
            n = _get_count(count, first)
            for t in sorted(fixed):
                if _get_count(count, t) != n:
                    raise TopicConfigurationError(
                        INCORRECTLY_PARTITIONED_TOPICS,
                        f"Following topics do not have the same number of partitions: [{_map_str(repartition)}]",
                    )
        else:
            n = max(repartition.values(), default=0)
            if n == 0:
                raise StreamsInvalidTopologyError(
                    f"All topics in the copartition group had undefined partition number: {_java_set(repartition)}"
                )
    else:
        values = [others[t] for t in sorted(others)]
        n = values[0]
        if any(v != n for v in values):
            raise TopicConfigurationError(
                INCORRECTLY_PARTITIONED_TOPICS,
                f"Following topics do not have the same number of partitions: [{_map_str(others)}]",
            )
    out = {}
    for t, c in sorted(repartition.items()):
        out[t] = n
        if t in fixed and c != n:
            raise TopicConfigurationError(
                INCORRECTLY_PARTITIONED_TOPICS,
                f"Number of partitions [{c}] of repartition topic [{t}] doesn't match number of partitions "
                f"[{n}] of the source topic.",
            )
    return out


def _changelog_topics_setup(subs, count) -> dict[str, int]:
    out = {}
    for s in subs:
        names = list(s["sourceTopics"]) + [t["name"] for t in s["repartitionSourceTopics"]]
        if not names:
            raise StreamsInvalidTopologyError(f"No source topics found for subtopology {s['subtopologyId']}")
        n = max(_get_count(count, t) for t in names)
        for t in s["stateChangelogTopics"]:
            out[t["name"]] = n
    return out


def _configured_subtopology(s, topics, decided) -> ConfiguredSubtopology:
    count = _partition_count(topics, decided)
    names = list(s["sourceTopics"]) + [t["name"] for t in s["repartitionSourceTopics"]]
    if not names:
        raise IllegalStateError("Subtopology does not contain any source topics")
    tasks = max(_get_count(count, t) for t in names)

    def internal(t):
        if t["partitions"] == 0 and t["name"] not in decided:
            raise IllegalStateError(f"Number of partitions must be set for topic {t['name']}")
        return t["partitions"] or decided[t["name"]]

    return ConfiguredSubtopology(
        tasks,
        frozenset(s["sourceTopics"]),
        {t["name"]: internal(t) for t in s["repartitionSourceTopics"]},
        frozenset(s["repartitionSinkTopics"]),
        {t["name"]: internal(t) for t in s["stateChangelogTopics"]},
    )


def _missing_internal_topics(configured: Mapping[str, ConfiguredSubtopology], topology, topics) -> dict[str, dict]:
    """The internal topics to create, as CreatableTopic-like dicts; an existing internal topic with
    another partition count is INCORRECTLY_PARTITIONED_TOPICS."""
    infos = {
        t["name"]: t
        for s in topology["subtopologies"]
        for t in s["repartitionSourceTopics"] + s["stateChangelogTopics"]
    }
    to_create: dict[str, dict] = {}
    for sub in configured.values():
        for name, n in list(sub.repartition_source_topics.items()) + list(sub.state_changelog_topics.items()):
            info = infos[name]
            to_create[name] = {
                "name": name,
                "numPartitions": n,
                "replicationFactor": info["replicationFactor"] or -1,
                "configs": [{"name": c["key"], "value": c["value"]} for c in info["topicConfigs"]],
            }
    for topic in sorted(required_topics(topology)):
        if topic not in topics:
            continue
        expected = to_create.pop(topic, None)
        if expected is not None and topics[topic] != expected["numPartitions"]:
            raise TopicConfigurationError(
                INCORRECTLY_PARTITIONED_TOPICS,
                f"Existing topic {topic} has different number of partitions: expected "
                f"{expected['numPartitions']}, found {topics[topic]}",
            )
    return to_create


def configured_to_json(t: ConfiguredTopology | None) -> dict | None:
    """The configured topology in a snapshot (soft state: Kafka keeps it in memory only)."""
    if t is None:
        return None
    subs = (
        None
        if t.subtopologies is None
        else {
            sid: {
                "tasks": s.number_of_tasks,
                "sourceTopics": sorted(s.source_topics),
                "repartitionSourceTopics": dict(s.repartition_source_topics),
                "repartitionSinkTopics": sorted(s.repartition_sink_topics),
                "stateChangelogTopics": dict(s.state_changelog_topics),
            }
            for sid, s in t.subtopologies.items()
        }
    )
    return {
        "epoch": t.topology_epoch,
        "metadataHash": t.metadata_hash,
        "subtopologies": subs,
        "toCreate": dict(t.internal_topics_to_create),
        "status": t.status,
        "statusDetail": t.status_detail,
    }


def configured_from_json(d: Mapping | None) -> ConfiguredTopology | None:
    if d is None:
        return None
    subs = (
        None
        if d["subtopologies"] is None
        else {
            sid: ConfiguredSubtopology(
                s["tasks"],
                frozenset(s["sourceTopics"]),
                dict(s["repartitionSourceTopics"]),
                frozenset(s["repartitionSinkTopics"]),
                dict(s["stateChangelogTopics"]),
            )
            for sid, s in d["subtopologies"].items()
        }
    )
    return ConfiguredTopology(
        d["epoch"], d["metadataHash"], subs, dict(d.get("toCreate") or {}), d.get("status"), d.get("statusDetail")
    )
