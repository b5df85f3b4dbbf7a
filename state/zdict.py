"""The preset zlib dictionary of format-3 chunks (flag 2 in state/chunked.py).

Chunks are small JSON documents with the same field names over and over; zlib alone barely
shrinks them, but primed with this text it stores mostly what differs (ids, numbers). The bytes
below are part of format 3: NEVER change them (a new dictionary needs a new chunk flag), or stored
states will no longer decode. zlib uses the last 32 KiB and prefers matches near the end, so the
most common text comes last.
"""

ZDICT_V1 = (
    b'{"groupId":"","groupEpoch":1,"assignmentEpoch":1,"members":{"":{"memberId":"","rackId":null,'
    b'"instanceId":null,"clientId":"","clientHost":"","subscribedTopicNames":[],"subscribedTopicRegex":"",'
    b'"serverAssignor":null,"rebalanceTimeoutMs":300000,"classicMemberMetadata":null,"memberEpoch":1,'
    b'"previousMemberEpoch":0,"state":"STABLE","assignedPartitions":{},"partitionsPendingRevocation":{}}},'
    b'"targetAssignment":{},"resolvedRegularExpressions":{},"type":"consumer","metadataHash":0,'
    b'"metadataRefreshDeadline":[0,0]}'
    b'[[0,0,"[\\"classic-session\\",\\"\\",\\"\\"]"],[0,0,"[\\"consumer-session\\",\\"\\",\\"\\"]"],'
    b'[0,0,"[\\"consumer-rebalance\\",\\"\\",\\"\\"]"],[0,0,"[\\"classic-join\\",\\"\\"]"],'
    b'[0,0,"txn-abort-timed-out:"],[0,0,"txn-expire-transactional-id:"]]'
    b'[0,"consumer-session",{"groupId":"","memberId":""},0]'
    b'[0,"classic-session",{"groupId":"","memberId":""},0]'
    b'[0,"txn-abort-timed-out",{"transactionalId":"","producerId":0},0]'
    b'[0,"txn-expire-transactional-id",{"transactionalId":""},0]'
    b'{"producerId":0,"prevProducerId":-1,"nextProducerId":-1,"producerEpoch":0,"lastProducerEpoch":-1,'
    b'"txnTimeoutMs":60000,"state":"Ongoing","topicPartitions":[["",0]],"txnStartTimestamp":-1,'
    b'"txnLastUpdateTimestamp":0,"clientTransactionVersion":2,"pendingState":null,"hasFailedEpochFence":false}'
    b'{"producerId":0,"prevProducerId":0,"nextProducerId":-1,"producerEpoch":0,"lastProducerEpoch":-1,'
    b'"txnTimeoutMs":60000,"state":"Empty","topicPartitions":[],"txnStartTimestamp":-1,'
    b'"txnLastUpdateTimestamp":0,"clientTransactionVersion":0,"pendingState":null,"hasFailedEpochFence":false}'
    b'{"type":"classic","groupId":"","state":"Stable","previousState":"CompletingRebalance","stateTimestamp":0,'
    b'"generationId":1,"protocolType":"consumer","protocolName":"range","leaderId":"","members":[{"memberId":"",'
    b'"groupInstanceId":null,"clientId":"","clientHost":"","rebalanceTimeoutMs":300000,"sessionTimeoutMs":45000,'
    b'"protocolType":"consumer","protocols":[["range",""]],"assignment":"","awaitingJoin":null,'
    b'"awaitingSync":null,"isNew":false}],"pendingJoinMembers":[],"pendingSyncMembers":[],'
    b'"subscribedTopics":null,"newMemberAdded":false}'
    b'{"type":"classic","groupId":"","state":"Empty","previousState":"Dead","stateTimestamp":0,'
    b'"generationId":0,"protocolType":null,"protocolName":null,"leaderId":null,"members":[],'
    b'"pendingJoinMembers":[],"pendingSyncMembers":[],"subscribedTopics":null,"newMemberAdded":false}'
    b'{"":{"0":[0,-1,"",0,null,0],"1":[0,0,"",0,null,0],"2":[0,0,"",0,null,0],"3":[0,0,"",0,null,0],'
    b'"4":[0,0,"",0,null,0],"5":[0,0,"",0,null,0],"6":[0,0,"",0,null,0],"7":[0,0,"",0,null,0],'
    b'"8":[0,0,"",0,null,0],"9":[0,0,"",0,null,0],"10":[0,0,"",0,null,0],"11":[0,0,"",0,null,0],'
    b'"12":[0,0,"",0,null,0],"13":[0,0,"",0,null,0],"14":[0,0,"",0,null,0],"15":[0,0,"",0,null,0]}}'
)
