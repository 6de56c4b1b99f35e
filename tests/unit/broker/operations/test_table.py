"""broker/apis.py's table: each API once (the table, or during the transition the legacy
registries, never both), each operation asking the authorizer only what its ACL row names, and
the direction of imports: doors and the table import codecs, codecs import operations, and
operations import none of them (no cycle, deferred or not).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from broker import apis
from broker.handlers import HANDLERS
from broker.handlers.kafka import KAFKA_HANDLERS
from broker.session import Session
from protocol.acl import AclOperation, ResourceType
from protocol.kafka.versions import SERVED

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


def test_an_api_is_served_by_the_table_or_by_a_legacy_handler_never_both() -> None:
    assert len(apis.BY_KEY) == len(apis.APIS)
    for row in apis.APIS:
        assert row.key not in HANDLERS and row.key not in KAFKA_HANDLERS, row.name
        assert row.key not in SERVED, row.name
        if row.kafka is not None:
            assert apis.KAFKA_SERVED[row.key] == row.kafka.versions
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
async def test_an_operation_asks_only_what_its_acl_row_names(row: apis.Api) -> None:
    """With every check denied and then allowed (no coordinator behind, but for ListGroups: the
    operation answers COORDINATOR_NOT_AVAILABLE), the authorizer is asked only the row's
    (operation, resource), and something unless the row names nothing (ApiVersions)."""
    named = {(r.operation, r.resource_type) for r in row.acl}
    asked: set[tuple[AclOperation, ResourceType]] = set()
    for allow in (False, True):
        authz = Recording(allow)
        fields = {"groups": None, "transactions": None, **CONTEXTS.get(row.name, {})}
        ctx: Any = SimpleNamespace(authorizer=authz, **fields)
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
