"""A Kafka-protocol gateway: unchanged Kafka clients use the coordinator service through it.

Clients bootstrap to the gateway. It passes data-plane requests through to the real broker,
rewrites broker addresses to its own listeners, answers FindCoordinator itself and bridges the
coordinator APIs to the service's JSON request and response topics (docs/gateway.md).
"""
