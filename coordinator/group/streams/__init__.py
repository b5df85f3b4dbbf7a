"""KIP-1071 streams groups: the algorithms (sans-IO, no coordinator state).

    tasks.py           TasksTuple (active, standby, warm-up tasks by subtopology)
    topology.py        StreamsTopology and InternalTopicManager.configureTopics (ConfiguredTopology)
    assignor.py        StickyTaskAssignor
    member.py          StreamsGroupMember and its MemberState
    reconciliation.py  CurrentAssignmentBuilder (revoke before assign)

The group coordinator's wiring is in `coordinator/group/streams_*.py`.
"""
