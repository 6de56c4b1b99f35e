"""OffsetFetch: a group's committed offsets (-1 where nothing is committed)."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.session import Session
from protocol.api.group import OffsetFetchRequest, OffsetFetchResponse
from protocol.codec import Request
from protocol.errors import NotCoordinatorError


def handle(ctx: BrokerContext, request: Request, session: Session) -> OffsetFetchResponse:
    req: OffsetFetchRequest = request.body
    if ctx.groups is None:
        return OffsetFetchResponse(NotCoordinatorError.code, [])
    return ctx.groups.fetch_offsets(req)
