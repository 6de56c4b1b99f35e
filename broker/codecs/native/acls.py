"""The native door's codecs of the ACL APIs (see broker/codecs/native/__init__.py): the native
messages (protocol/api/acls.py) carry bindings and filters as the operations take them, Kafka's
codes as ints, so these only change containers."""

from __future__ import annotations

from broker.codecs import Codec
from broker.operations import create_acls, delete_acls, describe_acls
from protocol.api import acls
from protocol.codec import Request

# ----- DescribeAcls ---------------------------------------------------------------------------


def _describe_in(request: Request) -> describe_acls.DescribeAcls:
    req: acls.DescribeAclsRequest = request.body
    return describe_acls.DescribeAcls(req.filter)


def _describe_out(
    request: Request, result: describe_acls.DescribeAclsResult
) -> acls.DescribeAclsResponse:
    return acls.DescribeAclsResponse(result.error_code, result.error_message,
                                     list(result.bindings))  # fmt: skip


DESCRIBE_ACLS = Codec(_describe_in, _describe_out)

# ----- CreateAcls -----------------------------------------------------------------------------


def _create_in(request: Request) -> create_acls.CreateAcls:
    req: acls.CreateAclsRequest = request.body
    return create_acls.CreateAcls(tuple(req.creations))


def _create_out(request: Request, result: create_acls.CreateAclsResult) -> acls.CreateAclsResponse:
    return acls.CreateAclsResponse(
        [acls.AclResult(r.error_code, r.error_message) for r in result.results]
    )


CREATE_ACLS = Codec(_create_in, _create_out)

# ----- DeleteAcls -----------------------------------------------------------------------------


def _delete_in(request: Request) -> delete_acls.DeleteAcls:
    req: acls.DeleteAclsRequest = request.body
    return delete_acls.DeleteAcls(tuple(req.filters))


def _delete_out(request: Request, result: delete_acls.DeleteAclsResult) -> acls.DeleteAclsResponse:
    return acls.DeleteAclsResponse([
        acls.DeleteAclsFilterResult(r.error_code, r.error_message, list(r.deleted))
        for r in result.results
    ])  # fmt: skip


DELETE_ACLS = Codec(_delete_in, _delete_out)
