"""What every group type offers the generic parts of the group coordinator.

Kafka's `org.apache.kafka.coordinator.group.Group` interface: one group id names exactly one group
of one type. The generic code (offset store, OffsetCommit/Fetch/Delete, ListGroups, DeleteGroups,
expiry) talks to groups only through this interface; the classic protocol lives in `classic/group.py`
and `classic/manager.py`, and KIP-848 consumer groups add their own type by subclassing `Group` and
calling `register_group_type`.

Validation methods raise `ApiError`; `GROUP_ID_NOT_FOUND` from `validate_offset_fetch` means "treat
as unknown group" (Kafka's GroupIdNotFoundException), every other error is reported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from ..errors import ApiError, Errors
from ..result import CoordinatorResult
from .classic.apis import join_response, leave_response, sync_response

# (offset) -> base timestamp in ms; see OffsetExpirationConditionImpl
BaseTimestamp = Callable[["object"], int]

CLASSIC, CONSUMER, STREAMS, SHARE = "classic", "consumer", "streams", "share"
GROUP_TYPE_NAMES = (CLASSIC, CONSUMER, STREAMS, SHARE)

_GROUP_TYPES: dict[str, type[Group]] = {}


class IllegalStateError(RuntimeError):
    """Kafka's IllegalStateException: a group's bookkeeping is inconsistent (a coordinator bug,
    never a client error). One class for every group type."""


def register_group_type(cls: type[Group]) -> type[Group]:
    _GROUP_TYPES[cls.type] = cls
    return cls


def group_from_json(data: dict) -> Group:
    return _GROUP_TYPES[data["type"]].from_json(data)


def parse_group_type(name: str) -> str:
    """`Group.GroupType.parse`: case-insensitive; an unknown name matches no group."""
    lowered = name.lower()
    return lowered if lowered in GROUP_TYPE_NAMES else "unknown"


class Group:
    type: ClassVar[str] = "unknown"
    group_id: str

    # ---------------------------------------------------------------- state
    def state_as_string(self) -> str:
        raise NotImplementedError

    def is_empty(self) -> bool:
        raise NotImplementedError

    def is_in_states(self, states_lower: set[str]) -> bool:
        return self.state_as_string().lower() in states_lower

    def protocol_type_or_empty(self) -> str:
        return ""

    def as_listed_group(self) -> dict:
        """ListGroupsResponse.ListedGroup (all fields; the API layer drops those a version lacks)."""
        return {
            "groupId": self.group_id,
            "protocolType": self.protocol_type_or_empty(),
            "groupState": self.state_as_string(),
            "groupType": self.type,
        }

    # ---------------------------------------------------------------- offsets
    def validate_offset_commit(
        self, member_id: str, instance_id: str | None, generation_id: int, is_transactional: bool, api_version: int
    ) -> Callable[[str, int], None] | None:
        """Raises ApiError, or returns a validator of each committed (topic, partition) (Kafka's
        CommitPartitionValidator; None: every partition passes)."""
        raise NotImplementedError

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        pass

    def validate_offset_delete(self) -> None:
        raise NotImplementedError

    def validate_delete_group(self) -> None:
        raise NotImplementedError

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return False

    def offset_expiration_base(self) -> BaseTimestamp | None:
        """The base timestamp function of Kafka's offsetExpirationCondition, or None when the
        group's offsets must not expire now."""
        return None

    def should_expire(self) -> bool:
        return True

    # ---------------------------------------------------------------- classic protocol
    # JoinGroup/SyncGroup/Heartbeat/LeaveGroup sent to a group of this type (Kafka's migration path
    # classicGroup*ToConsumerGroup). The defaults are what a group without that path answers.
    def classic_join(self, coordinator, request) -> dict | CoordinatorResult | None:
        return join_response(request.api_version, Errors.INCONSISTENT_GROUP_PROTOCOL, member_id="")

    def classic_sync(self, coordinator, request) -> dict | CoordinatorResult | None:
        return sync_response(request.api_version, Errors.UNKNOWN_MEMBER_ID)

    def classic_heartbeat(self, coordinator, request) -> dict | CoordinatorResult:
        raise ApiError(Errors.UNKNOWN_MEMBER_ID, f"Group {self.group_id} not found.")

    def classic_leave(self, coordinator, request, identities: list[dict]) -> dict | CoordinatorResult:
        return leave_response(
            request.api_version,
            Errors.NONE,
            [
                {
                    "memberId": i["memberId"],
                    "groupInstanceId": i.get("groupInstanceId"),
                    "errorCode": Errors.UNKNOWN_MEMBER_ID.code,
                }
                for i in identities
            ],
        )

    # ---------------------------------------------------------------- lifecycle
    def tombstone_record_keys(self) -> list[str]:
        """The state-log keys whose tombstones delete this group (not its offsets)."""
        raise NotImplementedError

    def timer_keys(self) -> list[str]:
        """Timers to cancel when the group is deleted."""
        return []

    # ---------------------------------------------------------------- snapshot
    def to_json(self) -> dict:
        raise NotImplementedError

    @classmethod
    def from_json(cls, data: dict) -> Group:
        raise NotImplementedError


def group_not_found(group_id: str) -> ApiError:
    return ApiError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
