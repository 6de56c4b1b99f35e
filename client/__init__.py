"""The odradek client library: asyncio-native clients and synchronous twins.

    from client import Admin, Consumer, NewTopic, Producer, TopicPartition

    with Admin("127.0.0.1:9092") as admin:
        admin.create_topics([NewTopic("events", num_partitions=3)])
    with Producer("127.0.0.1:9092") as producer:
        producer.send("events", b"hello", key=b"user-1").get(timeout=10)
    with Consumer("127.0.0.1:9092", auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("events", p) for p in range(3)])
        for tp, records in consumer.poll(timeout_ms=1000).items():
            ...

`AsyncProducer`, `AsyncConsumer` and `AsyncAdmin` run on the caller's event loop; `Producer`,
`Consumer` and `Admin` run their async twin on a private loop in a background thread.
`ShareConsumer` / `AsyncShareConsumer` are a share group's member (KIP-932: a work queue,
records acknowledged one by one, client/share_consumer.py). Names
follow kafka-python/aiokafka. `transport.connection.BrokerConnection` is the pipelined connection
to one broker that the clients (and the controller) use.
"""

from client.admin import AsyncAdmin
from client.consumer import AsyncConsumer
from client.producer import AsyncProducer
from client.share_acks import ShareRecord, ShareStateError
from client.share_consumer import AsyncShareConsumer
from client.sync import Admin
from client.sync_consumer import Consumer
from client.sync_producer import Producer
from client.sync_share_consumer import ShareConsumer
from client.types import (
    BatchMetadata,
    ConsumerRecord,
    NewTopic,
    OffsetAndTimestamp,
    PartitionDescription,
    RecordMetadata,
    TopicDescription,
    TopicPartition,
)

__all__ = [
    "Admin",
    "AsyncAdmin",
    "AsyncConsumer",
    "AsyncProducer",
    "AsyncShareConsumer",
    "BatchMetadata",
    "Consumer",
    "ConsumerRecord",
    "NewTopic",
    "OffsetAndTimestamp",
    "PartitionDescription",
    "Producer",
    "RecordMetadata",
    "ShareConsumer",
    "ShareRecord",
    "ShareStateError",
    "TopicDescription",
    "TopicPartition",
]
