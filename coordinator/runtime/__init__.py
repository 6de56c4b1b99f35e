"""The coordinator runtime: what the group and transaction coordinators share.

- runtime.py: `CoordinatorRuntime`, ownership of an internal topic's partitions by
  leadership, loading by replay, append-then-apply writes, the topic's creation.
- states.py: a partition's Down / Catch up / Ready table.
- log.py: the protocols the broker implements for it (`CoordinatorLog`, `ClusterView`,
  `TopicCreator`), so that nothing here imports `broker/`.
"""
