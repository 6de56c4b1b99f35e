"""The Kafka API keys, and why odradek serves the versions it does: the ranges themselves are
in broker/apis.py's table (`APIS`, one row per API), whose `KAFKA_SERVED` ApiVersions advertises.

Ranges are chosen so that kafka-python 3.x, librdkafka 2.x (confluent-kafka, kcat) and aiokafka
0.14 find the versions they need, and so that no version needs what odradek does not have; up
to Kafka 4.2's (kafka-python's broker_version_data, copied from a 4.2 broker's ApiVersions),
so that a 4.2 client takes its newest path:
- Produce from 0 as Kafka 4.0 advertises it (librdkafka before 2.11.1 turns compression off when
  the minimum is above 0), though only v3+ (record batch v2) decodes; older ones close the
  connection, as Kafka 4.0. Up to 12 as Kafka 4.0 (v10+ leader hints, KIP-951; v12 is
  transaction version 2: the produce adds its partitions to the transaction);
  v13 (Kafka 4.1) names topics by id: an id no topic has is UNKNOWN_TOPIC_ID.
- Fetch 4-18: v13+ names topics by id (KIP-516, kept as ZooKeeper-era Kafka keeps them), v16
  adds leader endpoints; v18 (Kafka 4.1, KIP-1166) adds a follower's high watermark, which a
  consumer leaves at its default (followers fetch through the native door).
- Metadata 0-13 (v10+ topic ids, v12 lookups by id, v13 a top-level error code), ListOffsets
  1-11 (v7 max timestamp, v8 earliest local = the log start since nothing is tiered, v9 latest
  tiered = -1, v10 a timeout only tiered lookups use, v11 as Kafka 4.2 earliest pending upload
  = -1, Kafka's answer for a topic not tiered). kafka-python 3.0.12 infers Kafka 4.2 from
  ListOffsets 11 (and 4.3 from DescribeLogDirs 5, which Kafka 4.2 does not serve).
- Unserved: an API key or version outside this table closes the connection, as Kafka does,
  with one log line naming the client (broker/doors.py).
- Admin: DeleteRecords 0-2, DescribeLogDirs 1-4 (v0 has no error codes per log dir),
  AlterReplicaLogDirs 1-2 (v0 is gone from Kafka 4),
  ElectLeaders 0-2, AlterPartitionReassignments 0-1 (v1, Kafka 4.1: KIP-860's
  allow_replication_factor_change), ListPartitionReassignments 0, DescribeCluster 0-2 (v2 lists
  fenced brokers, a KRaft notion: none here, every broker is unfenced), DescribeTopicPartitions
  0 (with topic ids), CreateTopics 2-7 (v7 answers the topic id), DeleteTopics 1-6 (v6 by name
  or id).
- Configs and partitions: DescribeConfigs 1-4 (v0 has is_default, not config_source),
  AlterConfigs 0-2, IncrementalAlterConfigs 0-1, CreatePartitions 0-3: every version Kafka 4.0
  serves. ListConfigResources 0-1 (KIP-1142, Kafka 4.1; v0 is ListClientMetricsResources).
- ACLs (broker/operations/*_acls.py): DescribeAcls, CreateAcls and DeleteAcls 1-3 as Kafka 4.0
  (v0, without pattern types, is gone from Kafka 4).
- Consumer groups on Kafka's classic protocol: JoinGroup 0-9 (v5+ static membership,
  KIP-345; v9 skip_assignment, KIP-814), SyncGroup 0-5, Heartbeat 0-4, LeaveGroup 0-5 (v3+
  batch removal by member or instance id), OffsetCommit 2-7 and OffsetFetch 1-7 (v8+ batch
  groups), FindCoordinator 0-6 (v5 and v6, Kafka 4.0's, change nothing odradek answers: the
  TRANSACTION_ABORTABLE code, share groups' key type), DescribeGroups 0-6 (v6, KIP-1043: an
  unknown group is GROUP_ID_NOT_FOUND), ListGroups 0-4, DeleteGroups 0-2, OffsetDelete 0.
- KIP-848 consumer groups (group.protocol=consumer): ConsumerGroupHeartbeat 0-1 and
  ConsumerGroupDescribe 0-1, as Kafka 4.0 (v1: the client makes its member id, KIP-1082);
  OffsetCommit 8-10 (v9: generation id is the member epoch) and OffsetFetch 8-10 (v8 batches
  groups, v9 a member id and epoch), both v10 (Kafka 4.2) naming topics by id (an unknown id:
  UNKNOWN_TOPIC_ID), ListGroups 5 (group types filter).
- Transactions (KIP-98, KIP-447, KIP-939): InitProducerId 0-6 (v6: two-phase commit),
  AddPartitionsToTxn 0-5 (v4: brokers' verify_only, KIP-890 part 1), AddOffsetsToTxn 0-4,
  EndTxn 0-5 and TxnOffsetCommit 0-5 (v5 of the three, with Produce v12, is KIP-890 part 2,
  transaction version 2, which ApiVersions finalizes), DescribeProducers 0, DescribeTransactions 0,
  ListTransactions 0-2 (v2, Kafka 4.1: a transactional id pattern, KIP-1152), WriteTxnMarkers
  1-2 (what kafka-transactions.sh abort sends to a leader; v0 is gone from Kafka 4).
- SCRAM credentials (KIP-554): DescribeUserScramCredentials 0 and AlterUserScramCredentials 0,
  as Kafka 4.0.
- SASL (broker/security/sasl.py): SaslHandshake 0-1 and SaslAuthenticate 0-2 (v1+ carries the
  KIP-368 session lifetime, v2 is flexible). v0 of SaslHandshake is listed because librdkafka
  before 2.10 (kcat's 2.0.2) says "SASL Handshake not supported by broker" without it; a v0
  request (raw SASL tokens without Kafka headers would follow) is refused UNSUPPORTED_VERSION:
  librdkafka, kafka-python 3, aiokafka and Java clients all send v1.
"""

from __future__ import annotations

PRODUCE = 0
FETCH = 1
LIST_OFFSETS = 2
METADATA = 3
OFFSET_COMMIT = 8
OFFSET_FETCH = 9
FIND_COORDINATOR = 10
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
SASL_HANDSHAKE = 17
API_VERSIONS = 18
CREATE_TOPICS = 19
DELETE_TOPICS = 20
DELETE_RECORDS = 21
INIT_PRODUCER_ID = 22
OFFSET_FOR_LEADER_EPOCH = 23
ADD_PARTITIONS_TO_TXN = 24
ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
WRITE_TXN_MARKERS = 27
TXN_OFFSET_COMMIT = 28
DESCRIBE_ACLS = 29
CREATE_ACLS = 30
DELETE_ACLS = 31
DESCRIBE_CONFIGS = 32
ALTER_CONFIGS = 33
ALTER_REPLICA_LOG_DIRS = 34
DESCRIBE_LOG_DIRS = 35
SASL_AUTHENTICATE = 36
CREATE_PARTITIONS = 37
ELECT_LEADERS = 43
INCREMENTAL_ALTER_CONFIGS = 44
ALTER_PARTITION_REASSIGNMENTS = 45
LIST_PARTITION_REASSIGNMENTS = 46
DELETE_GROUPS = 42
OFFSET_DELETE = 47
DESCRIBE_CLIENT_QUOTAS = 48
ALTER_CLIENT_QUOTAS = 49
DESCRIBE_USER_SCRAM_CREDENTIALS = 50
ALTER_USER_SCRAM_CREDENTIALS = 51
DESCRIBE_CLUSTER = 60
DESCRIBE_PRODUCERS = 61
DESCRIBE_TRANSACTIONS = 65
LIST_TRANSACTIONS = 66
DESCRIBE_TOPIC_PARTITIONS = 75
LIST_CONFIG_RESOURCES = 74
CONSUMER_GROUP_HEARTBEAT = 68
CONSUMER_GROUP_DESCRIBE = 69
SHARE_GROUP_HEARTBEAT = 76  # share groups (KIP-932)
SHARE_GROUP_DESCRIBE = 77
SHARE_FETCH = 78
SHARE_ACKNOWLEDGE = 79
# the share coordinator's state APIs (KIP-932), broker to broker
INITIALIZE_SHARE_GROUP_STATE = 83
READ_SHARE_GROUP_STATE = 84
WRITE_SHARE_GROUP_STATE = 85
DELETE_SHARE_GROUP_STATE = 86
READ_SHARE_GROUP_STATE_SUMMARY = 87
# the share groups' admin offsets APIs (KIP-932)
DESCRIBE_SHARE_GROUP_OFFSETS = 90
ALTER_SHARE_GROUP_OFFSETS = 91
DELETE_SHARE_GROUP_OFFSETS = 92
