"""The odradek client library: asyncio-native clients and synchronous twins.

    from client import Producer, Consumer, Admin, TopicPartition

`AsyncProducer`, `AsyncConsumer` and `AsyncAdmin` run on the caller's event loop; `Producer`,
`Consumer` and `Admin` run their async twin on a private loop in a background thread. Names
follow kafka-python/aiokafka. `client.connection.BrokerConnection` is the pipelined connection
to one broker that the clients (and the controller) use.
"""

from client.admin import AsyncAdmin
from client.consumer import AsyncConsumer
from client.producer import AsyncProducer
from client.sync import Admin, Consumer, Producer
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
    "BatchMetadata",
    "Consumer",
    "ConsumerRecord",
    "NewTopic",
    "OffsetAndTimestamp",
    "PartitionDescription",
    "Producer",
    "RecordMetadata",
    "TopicDescription",
    "TopicPartition",
]
