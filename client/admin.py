"""Group administration over the coordinator service, as Kafka's admin client does it.

    admin = GroupAdmin(client)                       # a CoordinatorClient
    admin.list_groups()                              # every coordinator partition's groups
    admin.describe_groups(["orders-app"])            # {"orders-app": {...DescribedGroup...}}

A Kafka broker lists only the groups it coordinates, so the admin client sends ListGroups to every
broker; here every coordinator partition is asked (one request each, routed with a key that hashes
to it, `coordinator.routing.key_for_partition`), all sent before any answer is awaited.
DescribeGroups and DeleteGroups go to each group's coordinator, one request per partition with
that partition's groups.
"""

from __future__ import annotations

from coordinator.routing import DEFAULT_COORDINATOR_PARTITIONS, coordinator_partition, key_for_partition

LIST_VERSION, DESCRIBE_VERSION, DELETE_VERSION = 5, 6, 2


class GroupAdmin:
    def __init__(self, client, partitions: int = DEFAULT_COORDINATOR_PARTITIONS, timeout: float = 60.0):
        self.client = client
        self.partitions = partitions
        self.timeout = timeout

    def list_groups(
        self, states: list[str] | None = None, types: list[str] | None = None, partitions: list[int] | None = None
    ) -> list[dict]:
        """ListGroups v5 to every coordinator partition (or the given ones); the listed groups,
        each with its `coordinatorPartition`, sorted by group id."""
        body = {"statesFilter": states or [], "typesFilter": types or []}
        targets = range(self.partitions) if partitions is None else partitions
        cids = {
            p: self.client.send("ListGroups", LIST_VERSION, body, key=key_for_partition(p, self.partitions))
            for p in targets
        }
        out = []
        for p, cid in cids.items():
            resp = self.client.wait(cid, self.timeout)["response"]
            if resp["errorCode"] != 0:
                raise RuntimeError(f"ListGroups on coordinator partition {p}: error {resp['errorCode']}")
            out += [dict(g, coordinatorPartition=p) for g in resp["groups"]]
        return sorted(out, key=lambda g: g["groupId"])

    def _by_coordinator(self, group_ids: list[str]) -> dict[int, list[str]]:
        by_partition: dict[int, list[str]] = {}
        for g in dict.fromkeys(group_ids):
            by_partition.setdefault(coordinator_partition(g, self.partitions), []).append(g)
        return by_partition

    def describe_groups(self, group_ids: list[str]) -> dict[str, dict]:
        """DescribeGroups v6 to each group's coordinator: {group id: described group}."""
        cids = [
            self.client.send(
                "DescribeGroups",
                DESCRIBE_VERSION,
                {"groups": groups, "includeAuthorizedOperations": False},
                key=groups[0],
            )
            for groups in self._by_coordinator(group_ids).values()
        ]
        out = {}
        for cid in cids:
            for g in self.client.wait(cid, self.timeout)["response"]["groups"]:
                out[g["groupId"]] = g
        return out

    def delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        """DeleteGroups v2 to each group's coordinator: {group id: error code}."""
        cids = [
            self.client.send("DeleteGroups", DELETE_VERSION, {"groupsNames": groups}, key=groups[0])
            for groups in self._by_coordinator(group_ids).values()
        ]
        out = {}
        for cid in cids:
            for r in self.client.wait(cid, self.timeout)["response"]["results"]:
                out[r["groupId"]] = r["errorCode"]
        return out
