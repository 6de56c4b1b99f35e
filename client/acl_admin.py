"""Kafka's ACLs in the admin client, what `odradek acls` uses. AsyncAdmin inherits `AclAdmin`;
the sync Admin inherits `SyncAclAdmin`, whose methods run the same calls on its loop.

    create_acls    CreateAcls (30): store bindings; raises the first refusal, naming it
    describe_acls  DescribeAcls (29): the bindings a filter matches (Kafka's AclBindingFilter)
    delete_acls    DeleteAcls (31): delete what each filter matches; returns what was deleted

Bindings and filters are protocol/acl.py's. A broker without an authorizer answers
SecurityDisabledError; a principal without Cluster Alter (create, delete) or Describe
(describe), ClusterAuthorizationFailedError.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from protocol.acl import AclBinding, AclBindingFilter
from protocol.api.acls import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    binding_of,
    data_of,
    filter_data_of,
)
from protocol.errors import for_code


def _raise(code: int, message: str | None, what: str) -> None:
    if code:
        error = for_code(code)
        raise error(f"{what}: {message or error.default_message}")


class AclAdmin:
    request_timeout_ms: int
    _send_admin: Callable[..., Any]

    async def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        wanted = list(bindings)
        req = CreateAclsRequest([data_of(b) for b in wanted])
        resp: CreateAclsResponse = await self._send_admin(req, self.request_timeout_ms)
        for binding, result in zip(wanted, resp.results, strict=True):
            _raise(result.error_code, result.error_message, str(binding))

    async def describe_acls(self, selector: AclBindingFilter) -> list[AclBinding]:
        req = DescribeAclsRequest(filter_data_of(selector))
        resp: DescribeAclsResponse = await self._send_admin(req, self.request_timeout_ms)
        _raise(resp.error_code, resp.error_message, "describing ACLs")
        return [binding_of(b) for b in resp.bindings]

    async def delete_acls(self, selectors: Iterable[AclBindingFilter]) -> list[AclBinding]:
        wanted = list(selectors)
        req = DeleteAclsRequest([filter_data_of(f) for f in wanted])
        resp: DeleteAclsResponse = await self._send_admin(req, self.request_timeout_ms)
        deleted: dict[AclBinding, None] = {}
        for result in resp.results:
            _raise(result.error_code, result.error_message, "deleting ACLs")
            deleted.update((binding_of(b), None) for b in result.deleted)
        return list(deleted)


class SyncAclAdmin:
    """The same calls on the sync Admin (client/sync.py), each run on its loop."""

    _run: Callable[..., Any]

    def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        wanted = list(bindings)
        self._run(lambda a: a.create_acls(wanted))

    def describe_acls(self, selector: AclBindingFilter) -> list[AclBinding]:
        found: list[AclBinding] = self._run(lambda a: a.describe_acls(selector))
        return found

    def delete_acls(self, selectors: Iterable[AclBindingFilter]) -> list[AclBinding]:
        wanted = list(selectors)
        deleted: list[AclBinding] = self._run(lambda a: a.delete_acls(wanted))
        return deleted
