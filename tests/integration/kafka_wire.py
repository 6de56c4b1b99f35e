"""Kafka group requests sent by hand to a broker's Kafka listener, for tests that look at a group
from outside (or act as a member by hand): FindCoordinator, DescribeGroups, OffsetFetch,
OffsetCommit, JoinGroup, SyncGroup. Blocking sockets, one request at a time; requests and
answers are kio entities (protocol/kafka/codec.py `encode_request` / `decode_response`).

`group_view` answers what the coordinator says a group is: its Kafka state name, protocol and
members with the partitions decoded from their assignment bytes. `wait_converged` polls it (with
a deadline) until the group is Stable with exactly the expected members and every partition of a
topic is assigned to exactly one of them.
"""

from __future__ import annotations

import itertools
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from protocol.kafka import codec
from protocol.kafka.consumer_protocol import assigned_partitions
from protocol.kafka.versions import (
    DESCRIBE_GROUPS,
    FIND_COORDINATOR,
    JOIN_GROUP,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    SYNC_GROUP,
)

CALL_TIMEOUT_S = 10.0
NONE = 0
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
UNKNOWN_MEMBER_ID = 25
MEMBER_ID_REQUIRED = 79
_correlation = itertools.count(1)

Address = tuple[str, int]


class KafkaConn:
    """One connection to a Kafka listener; `call` sends a request and reads its answer."""

    def __init__(self, address: Address, timeout_s: float = CALL_TIMEOUT_S) -> None:
        self.sock = socket.create_connection(address, timeout=timeout_s)

    def call(self, key: int, version: int, /, **fields: Any) -> Any:
        body = codec.make(codec.request_class(key, version), **fields)
        corr = next(_correlation)
        self.sock.sendall(codec.encode_request(key, version, corr, body, client_id="wire-test"))
        (size,) = struct.unpack(">i", self._read(4))
        got, answer = codec.decode_response(key, version, self._read(size))
        assert got == corr, f"correlation id {got}, sent {corr}"
        return answer

    def _read(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            out += chunk
        return out

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> KafkaConn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def call(address: Address, key: int, version: int, /, **fields: Any) -> Any:
    with KafkaConn(address) as conn:
        return conn.call(key, version, **fields)


def nested(key: int, version: int, name: str, /, **fields: Any) -> Any:
    """A nested request entity (a topic, a partition, a protocol) of (key, version)."""
    return codec.make(codec.nested(codec.request_class(key, version), name), **fields)


def addresses(bootstrap: str) -> list[Address]:
    out = []
    for hp in bootstrap.split(","):
        host, _, port = hp.rpartition(":")
        out.append((host, int(port)))
    return out


# ----- looking at a group ---------------------------------------------------------------------


def find_coordinator(bootstrap: str, group: str) -> tuple[int, Address] | None:
    """(node id, Kafka address) of the group's coordinator, asking each broker in turn; None
    when no live broker names one (it is moving)."""
    for address in addresses(bootstrap):
        try:
            resp = call(address, FIND_COORDINATOR, 2, key=group, key_type=0)
        except OSError:
            continue
        if resp.error_code.value == NONE:
            return int(resp.node_id), (resp.host, int(resp.port))
    return None


@dataclass(frozen=True)
class MemberView:
    member_id: str
    client_id: str
    client_host: str
    partitions: list[tuple[str, int]]


@dataclass(frozen=True)
class GroupView:
    coordinator: int
    error_code: int
    state: str  # Kafka's name: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
    protocol_type: str
    protocol: str
    members: list[MemberView]

    def owners(self, topic: str) -> dict[int, list[str]]:
        """partition -> client ids of the members it is assigned to."""
        out: dict[int, list[str]] = {}
        for m in self.members:
            for t, p in m.partitions:
                if t == topic:
                    out.setdefault(p, []).append(m.client_id)
        return out


def group_view(bootstrap: str, group: str) -> GroupView | None:
    """DescribeGroups v3 at the coordinator; None when it cannot be reached just now."""
    found = find_coordinator(bootstrap, group)
    if found is None:
        return None
    node, address = found
    try:
        resp = call(address, DESCRIBE_GROUPS, 3, groups=(group,),
                    include_authorized_operations=False)  # fmt: skip
    except OSError:
        return None
    (g,) = resp.groups
    members = [
        MemberView(m.member_id, m.client_id, m.client_host,
                   assigned_partitions(bytes(m.member_assignment)))
        for m in g.members
    ]  # fmt: skip
    return GroupView(node, g.error_code.value, g.group_state, g.protocol_type, g.protocol_data,
                     members)  # fmt: skip


def converged(view: GroupView | None, topic: str, partitions: int, client_ids: set[str]) -> bool:
    """Stable, exactly `client_ids` as members, each partition owned by exactly one of them."""
    if view is None or view.error_code != NONE or view.state != "Stable":
        return False
    if sorted(m.client_id for m in view.members) != sorted(client_ids):
        return False
    owners = view.owners(topic)
    return sorted(owners) == list(range(partitions)) and all(len(o) == 1 for o in owners.values())


def wait_for(check: Callable[[], Any], what: str, timeout_s: float) -> Any:
    """Poll `check` until it returns something true, at most `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(0.1)


def wait_converged(bootstrap: str, group: str, topic: str, partitions: int,
                   client_ids: set[str], timeout_s: float = 60.0) -> GroupView:  # fmt: skip
    last: list[GroupView | None] = [None]

    def check() -> GroupView | None:
        view = last[0] = group_view(bootstrap, group)
        return view if converged(view, topic, partitions, client_ids) else None

    try:
        found: GroupView = wait_for(check, f"group {group} to converge", timeout_s)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; members {sorted(client_ids)}, last view {last[0]}") from None
    return found


def _offsets_at_coordinator(bootstrap: str, group: str) -> tuple[tuple[int, Address], Any] | None:
    """(the coordinator, its OffsetFetch v5 answer for all topics); None when it cannot answer
    without an error just now (moving, loading, not yet told it leads)."""
    found = find_coordinator(bootstrap, group)
    if found is None:
        return None
    try:
        resp = call(found[1], OFFSET_FETCH, 5, group_id=group, topics=None)
    except OSError:
        return None
    return None if resp.error_code.value != NONE else (found, resp)


def ready_coordinator(bootstrap: str, group: str, timeout_s: float = 30.0) -> tuple[int, Address]:
    """The group's coordinator once it answers as one (an OffsetFetch gets no error). The broker
    asked names the leader its metadata has, which may be ahead of that leader's own
    LeaderAndIsr: a Kafka client then meets NOT_COORDINATOR and looks again, and so do we."""
    got = wait_for(lambda: _offsets_at_coordinator(bootstrap, group),
                   f"the coordinator of {group}", timeout_s)  # fmt: skip
    found: tuple[int, Address] = got[0]
    return found


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int] | None:
    """Every committed offset of the group (OffsetFetch v5, all topics); None when the
    coordinator cannot answer just now (moving, loading)."""
    got = _offsets_at_coordinator(bootstrap, group)
    if got is None:
        return None
    return {(t.name, p.partition_index): int(p.committed_offset)
            for t in got[1].topics for p in t.partitions
            if p.error_code.value == NONE and p.committed_offset >= 0}  # fmt: skip


# ----- a member by hand -----------------------------------------------------------------------


def subscription(topics: list[str]) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, null user data."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


def join(conn: KafkaConn, group: str, topics: list[str], member_id: str = "",
         session_ms: int = 10_000, assignor: str = "range") -> Any:  # fmt: skip
    """JoinGroup v4 (asking again with the id a MEMBER_ID_REQUIRED answer gives)."""
    protocol = nested(JOIN_GROUP, 4, "JoinGroupRequestProtocol", name=assignor,
                      metadata=subscription(topics))  # fmt: skip
    resp = conn.call(JOIN_GROUP, 4, group_id=group, session_timeout=session_ms,
                     rebalance_timeout=session_ms, member_id=member_id,
                     protocol_type="consumer", protocols=(protocol,))  # fmt: skip
    if resp.error_code.value == MEMBER_ID_REQUIRED and not member_id:
        return join(conn, group, topics, resp.member_id, session_ms, assignor)
    return resp


def sync(conn: KafkaConn, group: str, generation: int, member_id: str,
         assignments: dict[str, bytes]) -> Any:  # fmt: skip
    entries = tuple(
        nested(SYNC_GROUP, 3, "SyncGroupRequestAssignment", member_id=m, assignment=a)
        for m, a in assignments.items()
    )
    return conn.call(SYNC_GROUP, 3, group_id=group, generation_id=generation,
                     member_id=member_id, group_instance_id=None, assignments=entries)  # fmt: skip


def commit(conn: KafkaConn, group: str, generation: int, member_id: str,
           offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:  # fmt: skip
    """OffsetCommit v7; the error code of each partition."""
    by_topic: dict[str, list[Any]] = {}
    for (t, p), o in offsets.items():
        by_topic.setdefault(t, []).append(
            nested(OFFSET_COMMIT, 7, "OffsetCommitRequestPartition", partition_index=p,
                   committed_offset=o, committed_leader_epoch=-1, committed_metadata="")
        )  # fmt: skip
    topics = tuple(nested(OFFSET_COMMIT, 7, "OffsetCommitRequestTopic", name=t,
                          partitions=tuple(ps)) for t, ps in by_topic.items())  # fmt: skip
    resp = conn.call(OFFSET_COMMIT, 7, group_id=group, generation_id_or_member_epoch=generation,
                     member_id=member_id, group_instance_id=None, topics=topics)  # fmt: skip
    return {(t.name, p.partition_index): p.error_code.value
            for t in resp.topics for p in t.partitions}  # fmt: skip
