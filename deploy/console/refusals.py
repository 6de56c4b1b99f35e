"""What the broker refuses a reader, kept apart from what failed (deploy/console/gather.py).

On a secured cluster the console reads for each logged-in user with that user's own SASL
session (views.py), so the broker's authorizer decides what each part of the snapshot holds. An
authorization error is not a fault to retry and mark stale: it is the broker's answer, shown to
the user in its own words (`Refused`, model.refused_sections). `each_topic` keeps what the
broker does answer when one topic of many is refused (DescribeConfigs, DescribeProducers),
asking topic by topic once the whole-cluster request was refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from protocol.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)

T = TypeVar("T")
SHOWN_MAX = 5  # topics named in one refusal

REFUSALS = (ClusterAuthorizationFailedError, TopicAuthorizationFailedError,
            GroupAuthorizationFailedError, TransactionalIdAuthorizationFailedError)  # fmt: skip


class Refused(Exception):
    """The broker refused (part of) a part to this reader: `data` is what it did answer."""

    def __init__(self, why: str, data: Any) -> None:
        super().__init__(why)
        self.data = data


@dataclass(frozen=True, slots=True)
class Viewer:
    """Whom a Gatherer reads for, on a secured cluster (None: the console's own settings)."""

    user: str
    cluster_alter: bool  # allowed Alter on the Cluster at login: sees the chaos timeline


async def each_topic(
    topics: list[str], ask: Callable[[list[str]], Awaitable[T]]
) -> tuple[list[T], list[str]]:
    """([ask(topics)], []); when the broker refuses that (an ACL on some topic), ask(topic) for
    each topic alone: (the answers, the topics refused). Other errors are raised."""
    try:
        return [await ask(topics)], []
    except REFUSALS:
        pass
    answers = await asyncio.gather(*(ask([t]) for t in topics), return_exceptions=True)
    refused = [t for t, a in zip(topics, answers, strict=True) if isinstance(a, REFUSALS)]
    for a in answers:
        if isinstance(a, BaseException) and not isinstance(a, REFUSALS):
            raise a
    return [a for a in answers if not isinstance(a, BaseException)], refused


def refused_text(topics: list[str], api: str) -> str:
    """TOPIC_AUTHORIZATION_FAILED (api) on a, b, c (and N more)."""
    more = len(topics) - SHOWN_MAX
    shown = ", ".join(topics[:SHOWN_MAX]) + (f" and {more} more" if more > 0 else "")
    return f"{TopicAuthorizationFailedError.name} ({api}) on {shown}"
