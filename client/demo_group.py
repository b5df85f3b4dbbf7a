"""Demo: classic consumer-group members against a running coordinator service.

    deploy/run-local.sh                                   # broker + job, in another terminal
    .venv/bin/python -m client.demo_group --group demo --topic demo-orders --members 3
    .venv/bin/python -m client.demo_group --group demo --topic demo-orders --members 1 --static s-1
    .venv/bin/python -m client.demo_group --list          # every group of every coordinator partition

Each member prints its assignment whenever a rebalance completes and commits an offset for each
of its partitions every few seconds (the offsets it fetched, plus what it "consumed"). Start a
second copy to watch the group rebalance; Ctrl-C closes the members (dynamic members send
LeaveGroup, static ones do not: their session timeout removes them, or a restart with the same
--static id takes their place without a rebalance). The topic is created if it does not exist.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time

from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError

from client import CoordinatorClient
from client.admin import GroupAdmin
from client.classic_group import STABLE, ClassicGroupMember


def ensure_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        if topic not in admin.list_topics():
            admin.create_topics([NewTopic(topic, partitions, 1)])
    except TopicAlreadyExistsError:
        pass
    finally:
        admin.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--requests-topic", default="coordinator-requests")
    ap.add_argument("--responses-topic", default="coordinator-responses")
    ap.add_argument("--group", default="demo")
    ap.add_argument("--topic", action="append", help="subscribed topic (repeatable; default demo-orders)")
    ap.add_argument("--partitions", type=int, default=6, help="partitions of a topic the demo creates")
    ap.add_argument("--members", type=int, default=1)
    ap.add_argument("--static", help="group.instance.id prefix: static members <prefix>, <prefix>-2, ...")
    ap.add_argument("--session-timeout-ms", type=int, default=10000)
    ap.add_argument("--list", action="store_true", help="list and describe the groups, then exit")
    ap.add_argument("--coordinator-partitions", type=int, default=50)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    if args.list:
        with CoordinatorClient(
            args.bootstrap, requests_topic=args.requests_topic, responses_topic=args.responses_topic
        ) as client:
            admin = GroupAdmin(client, partitions=args.coordinator_partitions)
            groups = admin.list_groups()
            described = admin.describe_groups([g["groupId"] for g in groups]) if groups else {}
            for g in groups:
                d = described[g["groupId"]]
                print(json.dumps({**g, "members": [m["memberId"] for m in d["members"]]}))
        return 0

    topics = args.topic or ["demo-orders"]
    for t in topics:
        ensure_topic(args.bootstrap, t, args.partitions)

    def on_assignment(member: ClassicGroupMember, assignment: dict) -> None:
        print(
            f"[{member.client_id}] generation {member.generation.generation_id}"
            f"{' (leader)' if member.is_leader else ''}: {json.dumps(assignment)}",
            flush=True,
        )

    members = []
    for i in range(args.members):
        instance = None if args.static is None else (args.static if i == 0 else f"{args.static}-{i + 1}")
        members.append(
            ClassicGroupMember(
                args.bootstrap,
                args.group,
                topics,
                group_instance_id=instance,
                session_timeout_ms=args.session_timeout_ms,
                requests_topic=args.requests_topic,
                responses_topic=args.responses_topic,
                on_assignment=on_assignment,
            ).start()
        )
    print(f"{len(members)} member(s) joining group {args.group} for {topics}; Ctrl-C to stop", flush=True)
    try:
        while True:
            time.sleep(5)
            for m in members:
                if m.fatal_error is not None:
                    print(f"[{m.client_id}] stopped: {m.fatal_error}", flush=True)
                    continue
                if m.state != STABLE or not m.assignment:
                    continue
                positions = m.committed()
                consumed = {tp: max(offset, 0) + 10 for tp, offset in positions.items()}
                errors = m.commit(consumed)
                print(
                    f"[{m.client_id}] committed {sorted((f'{t}-{p}', o) for (t, p), o in consumed.items())}"
                    + ("" if set(errors.values()) == {"NONE"} else f" errors {errors}"),
                    flush=True,
                )
    except KeyboardInterrupt:
        pass
    finally:
        for m in members:
            m.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
