"""Golden bytes for the ACL APIs on each door (broker/codecs/{native,kafka}/acls.py; harness
in golden.py): the native frame and Kafka's lowest and highest version served (v1, v3). Read
against Kafka's schemas: DescribeAclsRequest v1 is resource type (int8), name (nullable
string), pattern type (int8), principal, host (nullable strings), operation, permission
(int8); v2+ are flexible (compact strings, a tagged-field byte); the response groups bindings
by resource pattern.
"""

from __future__ import annotations

import pytest

from broker.operations import create_acls, delete_acls, describe_acls
from protocol.api import acls
from protocol.kafka import versions as v

from .golden import Case, check, kio, many, nested

BINDING = acls.AclBindingData(2, "orders", 3, "User:alice", "*", 3, 3)  # Topic LITERAL Read Allow
OTHER = acls.AclBindingData(2, "orders", 3, "User:bob", "*", 4, 3)  # ... Write
ANY_TOPIC = acls.AclFilterData(2, None, 1, None, None, 1, 1)  # Topic, any name/op/permission
DESCRIBED = describe_acls.DescribeAclsResult(0, None, (BINDING, OTHER))
CREATED = create_acls.CreateAclsResult((create_acls.Created(0),
                                        create_acls.Created(42, "bad principal")))  # fmt: skip
DELETED = delete_acls.DeleteAclsResult((delete_acls.FilterResult(0, None, (BINDING,)),
                                        delete_acls.FilterResult(31, "no")))  # fmt: skip


def _describe_request(version: int):  # type: ignore[no-untyped-def]
    return kio(v.DESCRIBE_ACLS, version, resource_type_filter=2, resource_name_filter=None,
               pattern_type_filter=1, principal_filter=None, host_filter=None, operation=1,
               permission_type=1)  # fmt: skip


def _create_request(version: int):  # type: ignore[no-untyped-def]
    return kio(v.CREATE_ACLS, version, creations=many(
        nested("AclCreation", resource_type=2, resource_name="orders", resource_pattern_type=3,
               principal="User:alice", host="*", operation=3, permission_type=3),
        nested("AclCreation", resource_type=2, resource_name="orders", resource_pattern_type=3,
               principal="bob", host="*", operation=4, permission_type=3)))  # fmt: skip


def _delete_request(version: int):  # type: ignore[no-untyped-def]
    filters = [
        nested("DeleteAclsFilter", resource_type_filter=2, resource_name_filter=None,
               pattern_type_filter=1, principal_filter=None, host_filter=None, operation=1,
               permission_type=1),
        nested("DeleteAclsFilter", resource_type_filter=2, resource_name_filter="x",
               pattern_type_filter=3, principal_filter="User:bob", host_filter="*",
               operation=1, permission_type=1),
    ]  # fmt: skip
    return kio(v.DELETE_ACLS, version, filters=many(*filters))


X_FILTER = acls.AclFilterData(2, "x", 3, "User:bob", "*", 1, 1)
BAD = acls.AclBindingData(2, "orders", 3, "bob", "*", 4, 3)

CASES = [
    Case("DescribeAcls native", v.DESCRIBE_ACLS, -1, lambda: acls.DescribeAclsRequest(ANY_TOPIC),
         describe_acls.DescribeAcls(ANY_TOPIC), DESCRIBED,
         "0000000f951d0007a163919702c001c0c00101",
         "000000379307009300c0929702a66f726465727303aa557365723a616c696365a12a03039702a66f726465727303a8557365723a626f62a12a0403"),
    Case("DescribeAcls v1", v.DESCRIBE_ACLS, 1, _describe_request(1),
         describe_acls.DescribeAcls(ANY_TOPIC), DESCRIBED,
         "0000001b001d00010000000700076f64726164656b02ffff01ffffffff0101",
         "0000003e00000007000000000000ffff000000010200066f72646572730300000002000a557365723a616c69636500012a03030008557365723a626f6200012a0403"),
    Case("DescribeAcls v3", v.DESCRIBE_ACLS, 3, _describe_request(3),
         describe_acls.DescribeAcls(ANY_TOPIC), DESCRIBED,
         "0000001a001d00030000000700076f64726164656b000200010000010100",
         "000000370000000700000000000000000202076f726465727303030b557365723a616c696365022a03030009557365723a626f62022a0403000000"),
    Case("CreateAcls native", v.CREATE_ACLS, -1,
         lambda: acls.CreateAclsRequest([BINDING, BAD]),
         create_acls.CreateAcls((BINDING, BAD)), CREATED,
         "00000033951e0007a16391929702a66f726465727303aa557365723a616c696365a12a03039702a66f726465727303a3626f62a12a0403",
         "0000001893070091929200c0922aad626164207072696e636970616c"),
    Case("CreateAcls v1", v.CREATE_ACLS, 1, _create_request(1),
         create_acls.CreateAcls((BINDING, BAD)), CREATED,
         "00000044001e00010000000700076f64726164656b000000020200066f726465727303000a557365723a616c69636500012a03030200066f7264657273030003626f6200012a0403",
         "000000210000000700000000000000020000ffff002a000d626164207072696e636970616c"),
    Case("CreateAcls v3", v.CREATE_ACLS, 3, _create_request(3),
         create_acls.CreateAcls((BINDING, BAD)), CREATED,
         "0000003f001e00030000000700076f64726164656b000302076f7264657273030b557365723a616c696365022a03030002076f72646572730304626f62022a04030000",
         "000000200000000700000000000300000000002a0e626164207072696e636970616c0000"),
    Case("DeleteAcls native", v.DELETE_ACLS, -1,
         lambda: acls.DeleteAclsRequest([ANY_TOPIC, X_FILTER]),
         delete_acls.DeleteAcls((ANY_TOPIC, X_FILTER)), DELETED,
         "00000022951f0007a16391929702c001c0c001019702a17803a8557365723a626f62a12a0101",
         "0000002893070091929300c0919702a66f726465727303aa557365723a616c696365a12a0303931fa26e6f90"),
    Case("DeleteAcls v1", v.DELETE_ACLS, 1, _delete_request(1),
         delete_acls.DeleteAcls((ANY_TOPIC, X_FILTER)), DELETED,
         "00000033001f00010000000700076f64726164656b0000000202ffff01ffffffff010102000178030008557365723a626f6200012a0101",
         "0000003d0000000700000000000000020000ffff000000010000ffff0200066f726465727303000a557365723a616c69636500012a0303001f00026e6f00000000"),
    Case("DeleteAcls v3", v.DELETE_ACLS, 3, _delete_request(3),
         delete_acls.DeleteAcls((ANY_TOPIC, X_FILTER)), DELETED,
         "0000002e001f00030000000700076f64726164656b000302000100000101000202780309557365723a626f62022a01010000",
         "00000033000000070000000000030000000200000002076f7264657273030b557365723a616c696365022a03030000001f036e6f010000"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)
