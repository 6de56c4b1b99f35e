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
from broker.session import Session
from protocol.api.fetch import FETCH
from protocol.codec import Request

HandlerResult = Any | None | Awaitable[Any | None]
Handler = Callable[[BrokerContext, Request, Session], HandlerResult]

HANDLERS: dict[int, Handler] = {}

CHUNKED: frozenset[int] = frozenset({FETCH.key})

__all__ = ["CHUNKED", "HANDLERS", "Handler", "HandlerResult"]
