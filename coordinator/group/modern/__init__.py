"""What KIP-848 consumer, KIP-932 share and KIP-1071 streams groups share (Kafka's
`org.apache.kafka.coordinator.group.modern`):

    group      ModernGroup: epochs, members, target assignment, metadata refresh, the tombstones of
               members and assignments
    member     ModernGroupMember: the fields every member type starts with, the replay of its two
               records and its snapshot form; the leave epochs
    hashing    Utils.computeTopicHash / computeGroupHash: the metadata hash a group epoch follows
    records    the {Consumer,Share,Streams}GroupMetadata and member-metadata replay, record values
               and the persisted-group lookup
    manager    ModernGroupManager: what every modern group type's manager does the same way (the
               clock, the broker's topics, the metadata hash, the group lookup by type, the describe
               loop, onLoaded timers, timer lookups, the created/joined/state-changed events)
    apis       the response fields every type's heartbeat and describe share
    ids        server-generated ids derived from the request (member ids, Uuids)

Each group type keeps only what is its own under `group/consumer/`, `group/share/`, `group/streams/`.
"""
