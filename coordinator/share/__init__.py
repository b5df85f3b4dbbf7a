"""KIP-932 share groups: the parts that are not the group coordinator's request handling.

- `coordinator.py`: the share coordinator (Kafka's ShareCoordinatorShard), the "share" component:
  share-partition state, its records and the Initialize/Read/Write/Delete/ReadSummary
  ShareGroupState APIs (`state_apis.py`), with Kafka's batch combiner (`batch_combiner.py`);
- `simple_assignor.py`: Kafka's SimpleAssignor (the share group assignor: a partition may be
  assigned to several members).

Importing this package registers nothing: coordinator/coordinators.py builds the share component
with the others, and coordinator/protocol/table.py lists its APIs.
"""
