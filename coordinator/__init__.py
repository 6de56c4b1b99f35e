"""The cluster's coordination: ZooKeeper, the controller, and the coordinators.

Sub-packages, each saying in its first lines what it owns (none imports `broker/`):
- cluster/: what every broker does through ZooKeeper: the session, registration, topic
  administration and configs, producer-id blocks, a leader's ISR writes.
- controller/: the elected controller and its pure decisions (leaders, placement of
  reassignments, partition and replica states).
- runtime/: the coordinator runtime: an internal topic's partitions owned by leadership, loaded
  by replay, written by append-then-apply. The group and transaction coordinators run on it.
- group/: the group coordinator (`__consumer_offsets`).
- transaction/: the transaction coordinator (`__transaction_state`).
- internal_topics.py: the internal topics' enforced configs.

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
protocol.errors; ZooKeeper trouble surfaces as coordinator.cluster.zk.ZkError subclasses
(ZkConnectionLost when the server cannot be reached).
"""
