"""KIP-848 properties: over any interleaving of joins, leaves, heartbeats and partition growth,
no partition ever has two owners (neither on the coordinator, assigned or pending revocation,
nor in what the clients believe they own); the group then converges to every partition owned
once. Plus the server assignors (uniform balanced and sticky, range) and the state tables."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.group import consumer_group as cg
from coordinator.group import consumer_heartbeat as hb
from coordinator.group.consumer_group import ConsumerConfig, ConsumerGroup, HeartbeatIn, Topics
from coordinator.group.consumer_states import (
    GROUP_STATES,
    MEMBER_STATES,
    GroupState,
    MemberState,
    check_transition,
    group_state,
)
from coordinator.group.server_assignors import MemberSpec, range_assignor, uniform

A = uuid.UUID(int=1)
B = uuid.UUID(int=2)
CONFIG = ConsumerConfig()

op = st.one_of(
    st.tuples(st.just("join"), st.integers(0, 4)),
    st.tuples(st.just("leave"), st.integers(0, 4)),
    st.tuples(st.just("beat"), st.integers(0, 4)),
    st.tuples(st.just("beat"), st.integers(0, 4)),
    st.tuples(st.just("grow"), st.integers(0, 2)),
    st.tuples(st.just("revoke"), st.integers(0, 4)),
    st.tuples(st.just("expire"), st.integers(0, 4)),
    st.tuples(st.just("static-leave"), st.integers(0, 4)),
)


def _flat(assignment) -> set[tuple[uuid.UUID, int]]:
    return {(t, p) for t, ps in assignment.items() for p in ps}


class Clients:
    """A client takes a partition it is given at once, and gives up one taken away from it only
    later (its "revoke" step: it commits and stops), reporting what it owns at each heartbeat."""

    def __init__(self) -> None:
        self.group = ConsumerGroup("g")
        self.owned: dict[str, set[tuple[uuid.UUID, int]]] = {}
        self.given: dict[str, set[tuple[uuid.UUID, int]]] = {}
        self.epoch: dict[str, int] = {}
        self.counts = {A: 3, B: 2}
        self.n = 0
        self.aliases: dict[str, str] = {}

    def topics(self) -> Topics:
        return Topics({"a": (A, self.counts[A]), "b": (B, self.counts[B])})

    def send(self, mid: str, epoch: int, owned, **kw) -> cg.HeartbeatOut:
        req = HeartbeatIn("g", mid, epoch, owned=owned, **kw)
        self.n += 1
        out = hb.heartbeat(self.group, req, self.topics(), self.n, CONFIG, lambda: "x")
        return out.response

    def apply(self, mid: str, r: cg.HeartbeatOut) -> None:
        if r.error_code != 0:
            self.forget(mid)  # fenced: the client drops everything and forgets
            return
        self.epoch[mid] = r.member_epoch
        if r.assignment is not None:
            self.given[mid] = _flat(r.assignment)
            self.owned[mid] = self.owned.get(mid, set()) | self.given[mid]

    def rename(self, old: str, new: str) -> None:
        r = self.send(
            new,
            0,
            {},
            rebalance_timeout_ms=1000,
            instance_id=f"s{old[1]}",
            subscribed_topic_names=("a", "b") if int(old[1]) % 2 else ("a",),
        )
        self.aliases[old] = new
        self.apply(new, r)

    def forget(self, mid: str) -> None:
        self.owned.pop(mid, None)
        self.given.pop(mid, None)
        self.epoch.pop(mid, None)

    def step(self, kind: str, i: int) -> None:
        mid = f"m{i}"
        while mid in self.aliases:  # a static member back under its new member id
            mid = self.aliases[mid]
        if kind == "join" and mid not in self.epoch and mid not in self.group.members:
            static = {"instance_id": f"s{i}"} if i < 2 else {}
            r = self.send(
                mid,
                0,
                {},
                rebalance_timeout_ms=1000,
                subscribed_topic_names=("a", "b") if i % 2 else ("a",),
                **static,
            )
            self.apply(mid, r)
        elif kind == "leave" and mid in self.epoch:
            self.send(mid, -1, None)
            self.forget(mid)
        elif kind == "expire" and mid in self.group.members:
            # its session or revocation deadline passed: the process is gone (as Kafka
            # assumes: a client that lost its session stops consuming before it is fenced)
            hb.fence(self.group, mid, self.topics(), self.n, CONFIG)
            self.forget(mid)
        elif kind == "static-leave" and mid in self.epoch and i < 2:
            # members 0 and 1 are static (instance s<i>): closing keeps their place
            self.send(mid, -2, None, instance_id=f"s{i}")
            self.forget(mid)
            # the instance comes back under a new member id, taking the old place over
            new = f"{mid}'"
            self.rename(mid, new)
        elif kind == "revoke" and mid in self.epoch:
            self.owned[mid] = self.owned.get(mid, set()) & self.given.get(mid, set())
        elif kind == "beat" and mid in self.epoch:
            owned: dict[uuid.UUID, frozenset[int]] = {}
            for t, p in self.owned.get(mid, set()):
                owned[t] = owned.get(t, frozenset()) | {p}
            self.apply(mid, self.send(mid, self.epoch[mid], owned))
        elif kind == "grow":
            topic = A if i else B
            self.counts[topic] += 1
        self.check()

    def check(self) -> None:
        seen: set[tuple[uuid.UUID, int]] = set()
        for m in self.group.members.values():
            mine = _flat(m.assignment.assigned) | _flat(m.assignment.pending_revocation)
            assert not mine & seen, "a partition with two owners on the coordinator"
            seen |= mine
        believed: set[tuple[uuid.UUID, int]] = set()
        for mid, parts in self.owned.items():
            assert not parts & believed, f"{mid} and another client both consume {parts & believed}"
            believed |= parts


@settings(max_examples=150, deadline=None)
@given(st.lists(op, max_size=40))
def test_no_partition_ever_has_two_owners_and_the_group_converges(ops) -> None:
    clients = Clients()
    for kind, i in ops:
        clients.step(kind, i)
    for _ in range(12):  # everyone heartbeats until stable
        for i in range(5):
            clients.step("revoke", i)
            clients.step("beat", i)
    for mid in [m for m in group_members(clients) if m not in clients.epoch]:
        hb.fence(clients.group, mid, clients.topics(), clients.n, CONFIG)  # parked, expired
    for _ in range(12):
        for i in range(5):
            clients.step("revoke", i)
            clients.step("beat", i)
    group = clients.group
    if group.members:
        assert group.state is GroupState.STABLE
        owned = [tp for parts in clients.owned.values() for tp in parts]
        want = {(A, p) for p in range(clients.counts[A])}
        if any(m.subscribed_topic_names == ("a", "b") for m in group.members.values()):
            want |= {(B, p) for p in range(clients.counts[B])}
        assert sorted(owned, key=str) == sorted(want, key=str)


def group_members(clients: Clients) -> list[str]:
    return list(clients.group.members)


# ----- assignors ---------------------------------------------------------------------------


def test_uniform_is_balanced() -> None:
    members = {f"m{i}": MemberSpec(frozenset({A, B})) for i in range(3)}
    out = uniform(members, {A: 7, B: 4})
    sizes = sorted(sum(len(ps) for ps in a.values()) for a in out.values())
    assert sizes == [3, 4, 4]
    everything = [(t, p) for a in out.values() for t, ps in a.items() for p in ps]
    assert len(everything) == len(set(everything)) == 11


def test_uniform_is_sticky() -> None:
    members = {f"m{i}": MemberSpec(frozenset({A})) for i in range(2)}
    first = uniform(members, {A: 6})
    members = {m: MemberSpec(frozenset({A}), first[m]) for m in first}
    members["m2"] = MemberSpec(frozenset({A}))
    second = uniform(members, {A: 6})
    for m in ("m0", "m1"):
        assert len(second[m][A]) == 2 and second[m][A] <= first[m][A]
    assert len(second["m2"][A]) == 2


def test_uniform_heterogeneous_respects_subscriptions() -> None:
    members = {"x": MemberSpec(frozenset({A})), "y": MemberSpec(frozenset({A, B}))}
    out = uniform(members, {A: 4, B: 4})
    assert B not in out["x"]
    assert len(out["x"][A]) + len(out["y"].get(A, frozenset())) == 4
    assert out["y"][B] == frozenset(range(4))


def test_range_gives_co_partitioned_ranges() -> None:
    members = {m: MemberSpec(frozenset({A, B})) for m in ("m1", "m2")}
    out = range_assignor(members, {A: 5, B: 5})
    assert out["m1"] == {A: frozenset({0, 1, 2}), B: frozenset({0, 1, 2})}
    assert out["m2"] == {A: frozenset({3, 4}), B: frozenset({3, 4})}


def test_range_assignor_is_chosen_by_most_members() -> None:
    group = ConsumerGroup("g")
    topics = Topics({"a": (A, 4)})
    for mid in ("m1", "m2"):
        req = HeartbeatIn(
            "g",
            mid,
            0,
            rebalance_timeout_ms=1,
            subscribed_topic_names=("a",),
            server_assignor="range",
            owned={},
        )
        hb.heartbeat(group, req, topics, 0, CONFIG, lambda: "x")
    assert group.target == {"m1": {A: frozenset({0, 1})}, "m2": {A: frozenset({2, 3})}}


# ----- state tables --------------------------------------------------------------------------


def test_state_tables_cover_every_state() -> None:
    assert set(GROUP_STATES) == set(GroupState)
    assert set(MEMBER_STATES) == set(MemberState)
    assert all(doc for doc, _ in GROUP_STATES.values())
    assert [int(s) for s in MemberState] == [0, 1, 2, 127]  # Kafka's bytes in record 8


def test_group_state_follows_epochs() -> None:
    assert group_state(0, 5, 5, True) is GroupState.EMPTY
    assert group_state(2, 6, 5, True) is GroupState.ASSIGNING
    assert group_state(2, 6, 6, False) is GroupState.RECONCILING
    assert group_state(2, 6, 6, True) is GroupState.STABLE
    with pytest.raises(AssertionError):
        check_transition(GroupState.DEAD, GroupState.STABLE)
