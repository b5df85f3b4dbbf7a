"""Python clients of the coordinator service (kafka-python): requests, events, state log, and a
KIP-848 consumer group member."""
from .consumer_group import GroupMember, TopicNames, new_member_id
from .request_client import CoordinatorClient, ResponseTimeout, response_partition

__all__ = ["CoordinatorClient", "GroupMember", "ResponseTimeout", "TopicNames", "new_member_id",
           "response_partition"]
