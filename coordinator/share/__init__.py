"""KIP-932 share groups: the parts that are not the group coordinator's request handling.

- `simple_assignor.py`: Kafka's SimpleAssignor (the share group assignor: a partition may be
  assigned to several members).
"""
