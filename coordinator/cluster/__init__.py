"""What every broker does with the cluster through ZooKeeper (kazoo is imported by zk.py only).

- zk.py: `ZkClient`, the asyncio facade over one ZooKeeper session (callbacks on the loop,
  "CONNECTED" / "SUSPENDED" / "LOST" state listeners, our own Zk* errors, transactions).
- zk_paths.py: Kafka's znode layout and its JSON as frozen dataclasses.
- registration.py: the ephemeral /brokers/ids/<id>, re-created after a session loss;
  cluster_id.py: the cluster id znode.
- topics.py (with placement.py, the pure replica placement): CreateTopics / DeleteTopics /
  DescribeConfigs / CreatePartitions as any broker does them; config_changes.py: AlterConfigs'
  write with its /config/changes notification, and the listener that applies topic config
  changes to this broker's logs.
- producer_ids.py: blocks of producer ids claimed in ZooKeeper (InitProducerId).
- isr.py: a leader's ISR writes and the /isr_change_notification the controller propagates.
- shutdown.py: a broker's side of controlled shutdown on SIGTERM.
"""
