"""The ZooKeeper controller: one broker, elected through /controller, runs the cluster.

- elector.py: `ControllerElector` (the election); core.py: `Controller` (the work: events run
  one at a time from events.py's bounded queue); the events' handlers, functions of the
  controller as event_ops.py's `EventOps` sees it: broker_changes.py (deaths, bounces, returns),
  topic_changes.py (new topics and partitions, deletions), partition_changes.py (first states,
  re-elections, ISR changes); loader.py: ZooKeeper read into the context; requests.py:
  LeaderAndIsr / UpdateMetadata built and batched; state_writer.py: batched, fenced,
  conditional writes of partition state znodes; channel.py: controller-to-broker requests, one
  ordered bounded queue per broker (`RecordingChannel` for tests); fast_death.py: a broker
  whose ports refuse connections is dead now.
- election.py (leader choice), states.py (partition and replica state tables), context.py (the
  controller's view): pure.
- admin.py: controlled shutdown, preferred leader election (by request and the automatic
  rebalance) and partition reassignment, run as controller events; their pure decisions are in
  election.py, preferred.py (leader imbalance) and reassignment.py (phases,
  /admin/reassign_partitions); log_dirs.py: failed log directories (KIP-112).
"""
