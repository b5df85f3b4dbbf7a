"""What KIP-848 consumer, KIP-932 share and KIP-1071 streams groups share (Kafka's
`org.apache.kafka.coordinator.group.modern`):

    hashing    Utils.computeTopicHash / computeGroupHash: the metadata hash a group epoch follows
    records    the {Consumer,Share,Streams}GroupMetadata replay and the persisted-group lookup
    manager    ModernGroupManager: what every modern group type's manager does the same way (the
               clock, the broker's topics, the metadata hash, the group lookup by type)
    ids        server-generated ids derived from the request (member ids, Uuids)

Each group type keeps only what is its own under `group/consumer/`, `group/share/`, `group/streams/`.
"""
