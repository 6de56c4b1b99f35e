"""The native door's codecs of the share-group APIs (KIP-932; protocol/api/share.py):
ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch and ShareAcknowledge, v0 each, over the
same operations as the Kafka door's (broker/codecs/kafka/share.py). Topic ids travel as a
uuid's text; a heartbeat's assignment names each topic beside its id. The native door has no
client host, and no renew-only acknowledgement (it sends RENEW as a type instead).
"""

from __future__ import annotations

import uuid

from broker.codecs import Codec
from broker.operations import (
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
)
from broker.operations.consumer_group_describe import AssignedTopic
from broker.operations.share_requests import AckBatch, PartitionIn
from protocol.api import share as wire
from protocol.codec import Request
from protocol.errors import InvalidRequestError


def _uuid(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        raise InvalidRequestError(f"{text!r} is not a topic id") from None


def _parts(parts: list[wire.SharePartitionRequest]) -> tuple[PartitionIn, ...]:
    return tuple(
        PartitionIn(_uuid(p.topic_id), p.partition, tuple(
            AckBatch(a.first_offset, a.last_offset, tuple(a.types)) for a in p.acks
        ))
        for p in parts
    )  # fmt: skip


# ----- ShareGroupHeartbeat (76) --------------------------------------------------------------


def _sgh_in(request: Request) -> share_group_heartbeat.ShareGroupHeartbeat:
    req: wire.ShareGroupHeartbeatRequest = request.body
    names = req.subscribed_topic_names
    return share_group_heartbeat.ShareGroupHeartbeat(
        req.group_id, req.member_id, req.member_epoch, req.rack_id,
        None if names is None else tuple(names), req.client_id or request.header.client_id or "",
    )  # fmt: skip


def _sgh_out(
    request: Request, result: share_group_heartbeat.ShareGroupHeartbeatResult
) -> wire.ShareGroupHeartbeatResponse:
    assignment = None
    if result.assignment is not None:
        assignment = [wire.ShareAssignedTopic(a.name or "", str(a.topic_id), list(a.partitions))
                      for a in result.assignment]  # fmt: skip
    return wire.ShareGroupHeartbeatResponse(
        result.error_code, result.error_message, result.member_id, result.member_epoch,
        result.heartbeat_interval_ms, assignment,
    )  # fmt: skip


SHARE_GROUP_HEARTBEAT = Codec(_sgh_in, _sgh_out)

# ----- ShareGroupDescribe (77) ---------------------------------------------------------------


def _sgd_in(request: Request) -> share_group_describe.ShareGroupDescribe:
    req: wire.ShareGroupDescribeRequest = request.body
    return share_group_describe.ShareGroupDescribe(tuple(req.group_ids))


def _topics(assigned: tuple[AssignedTopic, ...]) -> list[wire.ShareAssignedTopic]:
    return [wire.ShareAssignedTopic(t.name or "", str(t.topic_id), list(t.partitions))
            for t in assigned]  # fmt: skip


def _sgd_out(
    request: Request, result: share_group_describe.ShareGroupDescribeResult
) -> wire.ShareGroupDescribeResponse:
    return wire.ShareGroupDescribeResponse([
        wire.ShareGroupDescription(
            d.group_id, d.error_code, d.error_message, d.state, d.group_epoch,
            d.assignment_epoch, d.assignor_name, [
                wire.ShareMemberDescription(
                    m.member_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                    list(m.subscribed_topic_names), _topics(m.assignment))
                for m in d.members],
        )
        for d in result.groups
    ])  # fmt: skip


SHARE_GROUP_DESCRIBE = Codec(_sgd_in, _sgd_out)

# ----- ShareFetch (78) -----------------------------------------------------------------------


def _share_fetch_in(request: Request) -> share_fetch.ShareFetch:
    req: wire.ShareFetchRequest = request.body
    forgotten = tuple((_uuid(f.topic_id), f.partition) for f in req.forgotten)
    return share_fetch.ShareFetch(
        req.group_id, req.member_id, req.session_epoch, req.max_wait_ms, req.min_bytes,
        req.max_bytes, req.max_records, _parts(req.partitions), forgotten,
    )  # fmt: skip


def _share_fetch_out(
    request: Request, result: share_fetch.ShareFetchResult
) -> wire.ShareFetchResponse:
    return wire.ShareFetchResponse(
        result.error_code, result.error_message, result.lock_timeout_ms, [
            wire.SharePartitionData(
                str(p.topic_id), p.partition, p.error_code, p.error_message,
                p.acknowledge_error_code, wire.Records(p.records), [
                    wire.ShareAcquired(a.first_offset, a.last_offset, a.delivery_count)
                    for a in p.acquired])
            for p in result.partitions
        ],
    )  # fmt: skip


SHARE_FETCH = Codec(_share_fetch_in, _share_fetch_out)

# ----- ShareAcknowledge (79) -----------------------------------------------------------------


def _share_ack_in(request: Request) -> share_acknowledge.ShareAcknowledge:
    req: wire.ShareAcknowledgeRequest = request.body
    return share_acknowledge.ShareAcknowledge(
        req.group_id, req.member_id, req.session_epoch, _parts(req.partitions)
    )


def _share_ack_out(
    request: Request, result: share_acknowledge.ShareAcknowledgeResult
) -> wire.ShareAcknowledgeResponse:
    return wire.ShareAcknowledgeResponse(result.error_code, result.error_message, [
        wire.ShareAcknowledged(str(p.topic_id), p.partition, p.error_code, p.error_message)
        for p in result.partitions
    ])  # fmt: skip


SHARE_ACKNOWLEDGE = Codec(_share_ack_in, _share_ack_out)
