"""broker/apis.py's table: each API once, every API and version the doors served before the
table (2b73807) still served (newer versions may join: Kafka 4.2's, issue 33), each operation
asking the authorizer only what its ACL row names, and the direction of imports: doors and the
table import codecs, codecs import operations, and operations import none of them (no cycle,
deferred or not).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
from pathlib import Path
from typing import Any

import pytest

from broker import apis
from broker.session import Session
from protocol.acl import AclOperation, ResourceType
from tests.unit.broker.harness import running_broker

ROOT = Path(__file__).resolve().parents[4]


def _gathered(name: str) -> dict[str, Any]:
    """`name` (a dict keyed by API name) merged from every test_*operations.py module here:
    SAMPLES, a request model per API; CONTEXTS, what the operation needs on the context
    besides the authorizer (a service answering enough for it to ask)."""
    out: dict[str, Any] = {}
    for path in sorted(Path(__file__).parent.glob("test_*operations.py")):
        module = importlib.import_module(f"{__package__}.{path.stem}")
        for key, value in getattr(module, name, {}).items():
            assert key not in out, f"{key} in two modules' {name}"
            out[key] = value
    return out


SAMPLES = _gathered("SAMPLES")
CONTEXTS = _gathered("CONTEXTS")


# What each door served at 2b73807, before the table: the Kafka door's SERVED (api key:
# versions) and the native door's HANDLERS (api keys).
KAFKA_BEFORE = {
    0: (0, 12),
    1: (4, 17),
    2: (1, 10),
    3: (0, 13),
    8: (2, 9),
    9: (1, 9),
    10: (0, 4),
    11: (0, 9),
    12: (0, 4),
    13: (0, 5),
    14: (0, 5),
    15: (0, 5),
    16: (0, 5),
    17: (0, 1),
    18: (0, 4),
    19: (2, 7),
    20: (1, 6),
    21: (0, 2),
    22: (0, 6),
    23: (2, 4),
    24: (0, 5),
    25: (0, 4),
    26: (0, 5),
    27: (1, 2),
    28: (0, 5),
    29: (1, 3),
    30: (1, 3),
    31: (1, 3),
    32: (1, 4),
    33: (0, 2),
    35: (1, 4),
    36: (0, 2),
    37: (0, 3),
    42: (0, 2),
    43: (0, 2),
    44: (0, 1),
    45: (0, 0),
    46: (0, 0),
    47: (0, 0),
    48: (0, 1),
    49: (0, 1),
    50: (0, 0),
    51: (0, 0),
    60: (0, 1),
    61: (0, 0),
    65: (0, 0),
    66: (0, 1),
    68: (0, 1),
    69: (0, 1),
    74: (0, 1),  # ListConfigResources, added since (issue 33)
    75: (0, 0),
}
# Served since the table, by the Kafka door only (issue 33).
KAFKA_ADDED = {34: (1, 2)}  # AlterReplicaLogDirs
# Served since the table by the native door (KIP-932): the share-group APIs (76-79), for
# odradek's ShareConsumer, the share coordinator's state APIs (83-87), which a partition leader
# asks another broker, and the share groups' offsets APIs (90-92), for `odradek share-groups`.
NATIVE_ADDED = {76, 77, 78, 79, 83, 84, 85, 86, 87, 90, 91, 92}
NATIVE_BEFORE = {
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    10,
    11,
    12,
    13,
    15,
    16,
    17,
    19,
    20,
    21,
    22,
    23,
    24,
    25,
    26,
    27,
    28,
    29,
    30,
    31,
    32,
    33,
    36,
    37,
    42,
    43,
    45,
    46,
    48,
    49,
    50,
    51,
    61,
    65,
    66,
    68,
}


def test_each_api_is_one_row_and_the_doors_serve_what_they_served_before_the_table() -> None:
    assert len(apis.BY_KEY) == len(apis.APIS)
    for key, (lo, hi) in (KAFKA_BEFORE | KAFKA_ADDED).items():
        now = apis.KAFKA_SERVED.get(key)
        assert now is not None and now[0] <= lo and now[1] >= hi, (key, now, (lo, hi))
    assert set(apis.NATIVE) == NATIVE_BEFORE | NATIVE_ADDED
    assert set(SAMPLES) == {row.name for row in apis.APIS}


class Recording:
    """An authorizer answering `allow` to everything, remembering the checks it was asked
    (not KIP-430's questions of what the principal may do, which ask every operation)."""

    def __init__(self, allow: bool) -> None:
        self.allow = allow
        self.asked: set[tuple[AclOperation, ResourceType]] = set()

    def authorize(self, session: Any, op: AclOperation, rtype: ResourceType, name: str,
                  log_if_allowed: bool = True, **_: Any) -> bool:  # fmt: skip
        if log_if_allowed:  # not a KIP-430 question (rules.authorized_operations): a check
            self.asked.add((op, rtype))
        return self.allow

    def authorize_many(self, session: Any, op: AclOperation, rtype: ResourceType,
                       names: Any, **_: Any) -> set[str]:  # fmt: skip
        self.asked.add((op, rtype))
        return set(names) if self.allow else set()


@pytest.mark.parametrize("row", apis.APIS, ids=[row.name for row in apis.APIS])
async def test_an_operation_asks_only_what_its_acl_row_names(row: apis.Api, tmp_path: Path) -> None:
    """With every check denied and then allowed, on an in-process broker's complete context
    (leading nothing: no coordinator is ready) with what CONTEXTS gives the operation instead,
    the authorizer is asked only the row's (operation, resource), and something unless the
    row names nothing (ApiVersions)."""
    named = {(r.operation, r.resource_type) for r in row.acl}
    asked: set[tuple[AclOperation, ResourceType]] = set()
    async with running_broker(tmp_path) as b:
        for allow in (False, True):
            authz = Recording(allow)
            fields = CONTEXTS.get(row.name, {})
            ctx: Any = dataclasses.replace(b.ctx, authorizer=authz, **fields)  # type: ignore[arg-type]
            result = row.operation(ctx, Session(), SAMPLES[row.name])
            if inspect.isawaitable(result):
                result = await result
            assert result is not None
            asked |= authz.asked
    assert asked <= named and (asked or not named), f"{row.name} asked {asked}, names {named}"


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def _under(names: set[str], *prefixes: str) -> set[str]:
    return {n for n in names for p in prefixes if n == p or n.startswith(p + ".")}


def test_operations_import_no_door_codec_table_or_legacy_handler() -> None:
    for path in sorted((ROOT / "broker" / "operations").glob("*.py")):
        bad = _under(_imports(path), "broker.doors", "broker.codecs", "broker.apis",
                     "broker.handlers", "broker.server", "protocol.kafka")  # fmt: skip
        assert not bad, f"{path.name} imports {bad}"


def test_codecs_import_operations_not_the_table_or_the_doors() -> None:
    for path in sorted((ROOT / "broker" / "codecs").rglob("*.py")):
        bad = _under(_imports(path), "broker.doors", "broker.apis", "broker.handlers",
                     "broker.server", "broker.context")  # fmt: skip
        assert not bad, f"{path.name} imports {bad}"
