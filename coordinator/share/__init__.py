"""The share coordinator (KIP-932): share partitions' durable state in `__share_group_state`.

- records.py: ShareSnapshot / ShareUpdate keys and values, in Kafka's bytes.
- shard.py: one `__share_group_state` partition's state and the five state operations
  (Initialize, Read, Write, Delete, ReadSummary), pure: each returns records and an answer.
- service.py: `ShareCoordinator`, the shard on the coordinator runtime (coordinator/runtime/).
"""
