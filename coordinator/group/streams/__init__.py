"""KIP-1071 streams groups: the algorithms (sans-IO) and their coordinator wiring.

    tasks.py           TasksTuple (active, standby, warm-up tasks by subtopology)
    topology.py        StreamsTopology and InternalTopicManager.configureTopics (ConfiguredTopology)
    assignor.py        StickyTaskAssignor
    member.py          StreamsGroupMember and its MemberState
    reconciliation.py  CurrentAssignmentBuilder (revoke before assign)

The group coordinator's wiring (StreamsGroupHeartbeat, StreamsGroupDescribe, records, timers) is
`manager.py`; the group itself is `group.py`, the response builders `apis.py`.
"""
