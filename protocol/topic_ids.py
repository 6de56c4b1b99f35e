"""Topic ids (KIP-516): a random 128-bit id per topic, kept for the topic's whole life.

Kafka writes an id as its 16 bytes (most significant half first) in url-safe base64 without
padding: 22 characters, e.g. `"MKUXtpXCQ3SYIw9SCp6gzg"`. That string form is what goes in the
`/brokers/topics/<topic>` znode (version 3, field `"topic_id"`), in `partition.metadata` files
and in the controller's native requests; the Kafka wire protocol carries the 16 bytes (kio
hands them over as `uuid.UUID`).

Kafka never hands out the zero id (it means "no id" on the wire), the id 1 (the KRaft metadata
topic's), nor an id whose string starts with '-' (it would read as a command-line option);
`new_topic_id` draws again for those, as Kafka's `Uuid.randomUuid` does.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Callable

ZERO = uuid.UUID(int=0)
METADATA_TOPIC_ID = uuid.UUID(int=1)
ENCODED_LENGTH = 22


class InvalidTopicIdError(ValueError):
    """A string that is not a topic id's 22-character url-safe base64 form."""


def encode_topic_id(topic_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def decode_topic_id(text: str) -> uuid.UUID:
    if len(text) != ENCODED_LENGTH:
        raise InvalidTopicIdError(f"a topic id is {ENCODED_LENGTH} characters, got {text!r}")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError) as exc:
        raise InvalidTopicIdError(f"{text!r} is not url-safe base64: {exc}") from None
    if len(raw) != 16 or encode_topic_id(uuid.UUID(bytes=raw)) != text:
        raise InvalidTopicIdError(f"{text!r} is not the base64 form of 16 bytes")
    return uuid.UUID(bytes=raw)


def new_topic_id(random_uuid: Callable[[], uuid.UUID] = uuid.uuid4) -> uuid.UUID:
    """A fresh id: never zero, never the metadata topic's, never one whose string starts '-'."""
    while True:
        candidate = random_uuid()
        if candidate in (ZERO, METADATA_TOPIC_ID) or encode_topic_id(candidate).startswith("-"):
            continue
        return candidate
