"""Producer-id allocation: Kafka-style blocks of 1000 ids, carved per coordinator partition.

Kafka hands each broker blocks of `ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE` = 1000 ids from one
serialized allocator (the controller), whose high-water mark is in the replicated metadata log; ids
left unused in a block are lost. Here every coordinator partition carves its own blocks from a
space interleaved by partition, so no coordination is needed:

    block k of coordinator partition p (of N) = ids [(k*N + p) * 1000, (k*N + p) * 1000 + 999]

- unique across partitions: the blocks of different partitions are disjoint for any k;
- unique across restarts: the next block index is in the partition's state, and carving a block
  puts a ProducerIdBlock record in the handler's result, so a replay of the state log resumes after
  the last carved block (the rest of the current block is lost, as in Kafka);
- unique across replays of a batch: allocation is a pure function of the state the batch starts
  from, so a replayed batch hands out exactly the same ids.

The block index (`next_block`) changes only by replaying a ProducerIdBlock record. The cursor in the
current block (`next_id`, `last_id`) is what Kafka keeps in memory only (its ProducerIdManager's
current block): the handler that hands out an id moves it, and a load drops it (`forget_block`).

N (`coordinator.partitions`) must never change once ids were handed out, as Kafka's
`transaction.state.log.num.partitions` must not.
"""

from __future__ import annotations

from ..result import CoordinatorResult
from . import log

BLOCK_SIZE = 1000


class ProducerIdManager:
    def __init__(self, partition):
        self.p = partition
        self.next_block = 0  # index k of the next block to carve
        self.next_id = -1  # next id of the current block; -1: no current block
        self.last_id = -1

    def block_bounds(self, k: int) -> tuple[int, int]:
        n = self.p.config["coordinator.partitions"]
        first = (k * n + self.p.partition_id) * BLOCK_SIZE
        return first, first + BLOCK_SIZE - 1

    def generate_producer_id(self, result: CoordinatorResult) -> int:
        """The next producer id. Carving a new block adds its ProducerIdBlock record (and an event)
        to `result`; call it only once the handler can no longer fail with an ApiError, since the
        cursor moves at once."""
        if self.next_id < 0 or self.next_id > self.last_id:
            k = self.next_block
            first, last = self.block_bounds(k)
            result.record(
                log.block_key(self.p.partition_id),
                {
                    "type": log.PRODUCER_ID_BLOCK,
                    "assignedPartition": self.p.partition_id,
                    "coordinatorPartitions": self.p.config["coordinator.partitions"],
                    "blockIndex": k,
                    "firstProducerId": first,
                    "lastProducerId": last,
                },
            )
            result.emit(
                f"producer-ids-{self.p.partition_id}",
                "ProducerIdBlockAllocated",
                blockIndex=k,
                firstProducerId=first,
                lastProducerId=last,
            )
            self.next_id, self.last_id = first, last
        pid = self.next_id
        self.next_id += 1
        return pid

    def replay(self, assigned_partition: int, value: dict | None) -> None:
        """A ProducerIdBlock record (keyed by its coordinator partition): the blocks up to its
        index are taken."""
        if value is not None:
            self.next_block = max(self.next_block, int(value["blockIndex"]) + 1)

    def forget_block(self) -> None:
        """After a load: the rest of the current block is lost, as in Kafka."""
        self.next_id = self.last_id = -1

    def to_json(self) -> dict:
        return {"nextBlock": self.next_block, "nextId": self.next_id, "lastId": self.last_id}

    def load_json(self, d: dict) -> None:
        self.next_block = d.get("nextBlock", 0)
        self.next_id = d.get("nextId", -1)
        self.last_id = d.get("lastId", -1)
