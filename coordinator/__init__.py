"""ZooKeeper, broker registration, topic administration and the controller.

Modules (kazoo is imported by zk.py only):
- zk.py: `ZkClient`, the asyncio facade over one ZooKeeper session (callbacks on the loop,
  "CONNECTED" / "SUSPENDED" / "LOST" state listeners, our own Zk* errors, transactions).
- zk_paths.py: Kafka's znode layout and its JSON as frozen dataclasses.
- placement.py, election.py (pure decisions), states.py (state tables), context.py (the
  controller's view).
- topics.py: what any broker does for CreateTopics / DeleteTopics / DescribeConfigs /
  CreatePartitions; config_changes.py: AlterConfigs' write with its /config/changes
  notification, and the listener every broker runs to apply topic config changes to its logs.
- registration.py: the ephemeral /brokers/ids/<id>, re-created after a session loss.
- controller.py: `ControllerElector` (the election); controller_core.py: `Controller` (the work:
  one bounded event queue, events run one at a time); state_writer.py: batched, fenced,
  conditional writes of partition state znodes; channel.py: controller-to-broker requests, one
  ordered bounded queue per broker (`RecordingChannel` for tests).
- isr.py: a leader's ISR writes and the /isr_change_notification the controller propagates.
- controller_admin.py (issue 4): controlled shutdown, preferred leader election (by request and
  the automatic rebalance) and partition reassignment, run as controller events; their pure
  decisions are in election.py, preferred.py (leader imbalance) and reassignment.py (phases,
  /admin/reassign_partitions). shutdown.py: a broker's side of controlled shutdown on SIGTERM.

How the broker daemon uses it:

    zk = ZkClient("127.0.0.1:2181/odradek", session_timeout_ms=4000)
    await zk.start(timeout_s=10)                     # creates the chroot if missing
    registration = await register_broker(zk, broker_id, host, port)
    elector = ControllerElector(zk, broker_id)       # clock=, config=, channel_factory=
    await elector.start()
    ...
    elector.is_controller, elector.controller_epoch  # ours while controller, else None
    elector.controller_id                            # who holds /controller (None: nobody)
    await topics.create_topic(zk, name, partitions, rf, configs, live_broker_ids)
    await topics.delete_topic(zk, name); await topics.read_topic_config(zk, name)
    ...
    await elector.stop()                             # releases /controller if ours
    await registration.close()
    await zk.stop()                                  # ephemerals go with the session

`topics.create_topic` raises TopicAlreadyExistsError, InvalidTopicError, InvalidPartitionsError,
InvalidReplicationFactorError ("replication factor 3 is larger than the 2 live brokers") from
protocol.errors; ZooKeeper trouble surfaces as coordinator.zk.ZkError subclasses
(ZkConnectionLost when the server cannot be reached).
"""
