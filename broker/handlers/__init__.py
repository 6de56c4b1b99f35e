"""The native door's legacy handlers (the transition of issue 32: the APIs converted to one
operation per API are served through broker/apis.py's table instead, and are not here).
One module per API, each `handle(ctx, request, session)`: take the decoded request (and the
connection's session, broker/session.py: who asks), call a service, build the response. The
server looks handlers up here by api key.

A handler returns the response message, `None` (no response: produce with acks=0), or an
awaitable of either when it must wait (long-polling fetch, group commit, admin operations).
Returning a plain value when no waiting is needed lets the server answer without a task.
Responses of the APIs in `CHUNKED` may hold `FileSlice`s and are encoded as chunks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from broker.context import BrokerContext
from broker.handlers import (
    controlled_shutdown,
    fetch,
    find_coordinator,
    join_group,
    leader_and_isr,
    offset_commit,
    offset_fetch,
    offsets_for_leader_epoch,
    produce,
    stop_replica,
    update_metadata,
)
from broker.session import Session
from protocol.api.controller import (
    CONTROLLED_SHUTDOWN,
    LEADER_AND_ISR,
    STOP_REPLICA,
    UPDATE_METADATA,
)
from protocol.api.fetch import FETCH
from protocol.api.group import (
    FIND_COORDINATOR,
    JOIN_GROUP,
    OFFSET_COMMIT,
    OFFSET_FETCH,
)
from protocol.api.produce import PRODUCE
from protocol.api.replication import OFFSETS_FOR_LEADER_EPOCH
from protocol.codec import Request

HandlerResult = Any | None | Awaitable[Any | None]
Handler = Callable[[BrokerContext, Request, Session], HandlerResult]

HANDLERS: dict[int, Handler] = {
    PRODUCE.key: produce.handle,
    FETCH.key: fetch.handle,
    LEADER_AND_ISR.key: leader_and_isr.handle,
    STOP_REPLICA.key: stop_replica.handle,
    UPDATE_METADATA.key: update_metadata.handle,
    OFFSETS_FOR_LEADER_EPOCH.key: offsets_for_leader_epoch.handle,
    CONTROLLED_SHUTDOWN.key: controlled_shutdown.handle,
    FIND_COORDINATOR.key: find_coordinator.handle,
    JOIN_GROUP.key: join_group.handle,
    OFFSET_COMMIT.key: offset_commit.handle,
    OFFSET_FETCH.key: offset_fetch.handle,
}

CHUNKED: frozenset[int] = frozenset({FETCH.key})

__all__ = ["CHUNKED", "HANDLERS", "Handler", "HandlerResult"]
