"""FindCoordinator (API key 10): which coordinator partition owns a group or transactional id.

Kafka answers with the broker leading the owning partition of __consumer_offsets or
__transaction_state. Here every coordinator partition is reached through the same request topic,
so the answer's `nodeId` is the coordinator partition and `host`/`port` describe the service's
endpoint (its Kafka bootstrap address, from `coordinator.endpoint.*`).

Versions 0-6 as in Kafka 4.1 (KIP-896 kept version 0): 0-3 carry one `key` (v0: a group id), 4+ a
batch of `coordinatorKeys`. Like KafkaApis, the single-key form reports errorMessage "NONE" on
success (v1-3; v0 has neither `throttleTimeMs` nor `errorMessage`).
"""

from __future__ import annotations

from .component import Component
from .errors import ApiError, Errors
from .messages import Request
from .protocol.loader import shape
from .result import CoordinatorResult
from .routing import coordinator_partition
from .share.keys import parse_share_partition_key

GROUP, TRANSACTION, SHARE = 0, 1, 2


def _single(version: int, response: dict) -> dict:
    """The v0-3 response, shaped (v0 has no throttleTimeMs and no errorMessage)."""
    return shape("FindCoordinatorResponse", version, response)


class FindCoordinator(Component):
    """Stateless: any partition answers for any key."""

    name = "find_coordinator"
    HANDLERS = {"FindCoordinator": lambda c, request: c.find_coordinator(request)}

    def find_coordinator(self, request: Request) -> CoordinatorResult:
        return CoordinatorResult(response=self._answer(request))

    def _answer(self, request: Request) -> dict:
        body, version = request.body, request.api_version
        key_type = body.get("keyType", GROUP)  # v0: a group id
        if key_type not in (GROUP, TRANSACTION, SHARE) or (key_type == SHARE and version < 6):
            # KafkaApis: CoordinatorType.forId's InvalidRequestException becomes the error answer
            # (getErrorResponse) with the error's default message, not the exception's.
            raise ApiError(Errors.INVALID_REQUEST, Errors.INVALID_REQUEST.message)
        host = self.p.config["coordinator.endpoint.host"]
        port = self.p.config["coordinator.endpoint.port"]
        partitions = self.p.config["coordinator.partitions"]
        if version >= 4:
            return {
                "throttleTimeMs": 0,
                "coordinators": [
                    _invalid_share_key(k)
                    if key_type == SHARE and not _valid_share_key(k)
                    else {
                        "key": k,
                        "nodeId": coordinator_partition(k, partitions),
                        "host": host,
                        "port": port,
                        "errorCode": 0,
                        # KafkaApis (v4+) leaves it unset: the generated field's default, ""
                        "errorMessage": "",
                    }
                    for k in body["coordinatorKeys"]
                ],
            }
        return _single(
            version,
            {
                "throttleTimeMs": 0,
                "errorCode": 0,
                "errorMessage": "NONE",
                "nodeId": coordinator_partition(body["key"], partitions),
                "host": host,
                "port": port,
            },
        )


def _valid_share_key(key: str) -> bool:
    """SharePartitionKey.validate: `groupId:topicId:partition` (the share coordinator's key, KIP-932;
    keyType 2, FindCoordinator v6+). The partition is found from the whole key, as for a group."""
    try:
        parse_share_partition_key(key)
        return True
    except ValueError:
        return False


def _invalid_share_key(key: str) -> dict:
    return {
        "key": key,
        "nodeId": -1,
        "host": "",
        "port": -1,
        "errorCode": Errors.INVALID_REQUEST.code,
        "errorMessage": Errors.INVALID_REQUEST.message,
    }
