"""Golden bytes for the SCRAM credential APIs on each door (broker/codecs/{native,kafka}/
scram.py; harness in golden.py): the native frame and Kafka's v0, the only version (flexible).
Read against Kafka's schemas: an upsertion is name, mechanism (int8), iterations (int32), salt
and salted password (compact bytes); a describe answer has a top-level error and per-user
results with their (mechanism, iterations).
"""

from __future__ import annotations

from typing import Any

import pytest

from broker.operations import alter_user_scram_credentials as alter
from broker.operations import describe_user_scram_credentials as describe
from protocol.api import scram
from protocol.kafka import codec as kafka_codec
from protocol.kafka import versions as v

from .golden import Case, check, kio, many


def nested(entity: str, fields: dict[str, Any]) -> Any:
    """golden.nested for entities with a field called `name`."""
    return lambda cls: kafka_codec.make(kafka_codec.nested(cls, entity), **fields)


UPSERT = scram.ScramCredentialUpsertion("alice", 2, 8192, b"salt", b"key")
DELETE = scram.ScramCredentialDeletion("bob", 1)
ALTERED = alter.AlterUserScramCredentialsResult(
    (alter.Altered("bob", 91, "no such credential"), alter.Altered("alice", 0))
)
DESCRIBED = describe.DescribeUserScramCredentialsResult(0, None, (
    scram.DescribeUserScramCredentialsResult("alice", 0, None, [scram.CredentialInfo(2, 8192)]),
    scram.DescribeUserScramCredentialsResult("nobody", 91, "not found", []),
))  # fmt: skip

CASES = [
    Case("AlterUserScramCredentials native", v.ALTER_USER_SCRAM_CREDENTIALS, -1,
         lambda: scram.AlterUserScramCredentialsRequest([DELETE], [UPSERT]),
         alter.AlterUserScramCredentials((DELETE,), (UPSERT,)), ALTERED,
         "0000002595330007a163929192a3626f62019195a5616c69636502cd2000c40473616c74c4036b6579",
         "00000027930700919293a3626f625bb26e6f20737563682063726564656e7469616c93a5616c69636500c0"),
    Case("AlterUserScramCredentials v0", v.ALTER_USER_SCRAM_CREDENTIALS, 0,
         kio(v.ALTER_USER_SCRAM_CREDENTIALS, 0,
             deletions=many(nested("ScramCredentialDeletion", {"name": "bob", "mechanism": 1})),
             upsertions=many(nested("ScramCredentialUpsertion", {
                 "name": "alice", "mechanism": 2, "iterations": 8192, "salt": b"salt",
                 "salted_password": b"key"}))),
         alter.AlterUserScramCredentials((DELETE,), (UPSERT,)), ALTERED,
         "00000030003300000000000700076f64726164656b000204626f6201000206616c69636502000020000573616c74046b65790000",
         "0000002f0000000700000000000304626f62005b136e6f20737563682063726564656e7469616c0006616c6963650000000000"),
    Case("DescribeUserScramCredentials native", v.DESCRIBE_USER_SCRAM_CREDENTIALS, -1,
         lambda: scram.DescribeUserScramCredentialsRequest(["alice", "nobody"]),
         describe.DescribeUserScramCredentials(("alice", "nobody")), DESCRIBED,
         "0000001595320007a1639192a5616c696365a66e6f626f6479",
         "0000002a9307009300c09294a5616c69636500c0919202cd200094a66e6f626f64795ba96e6f7420666f756e6490"),
    Case("DescribeUserScramCredentials v0", v.DESCRIBE_USER_SCRAM_CREDENTIALS, 0,
         kio(v.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=many(
             nested("UserName", {"name": "alice"}), nested("UserName", {"name": "nobody"}))),
         describe.DescribeUserScramCredentials(("alice", "nobody")), DESCRIBED,
         "00000023003200000000000700076f64726164656b000306616c69636500076e6f626f64790000",
         "000000340000000700000000000000000306616c6963650000000202000020000000076e6f626f6479005b0a6e6f7420666f756e64010000"),
    Case("DescribeUserScramCredentials v0 everyone", v.DESCRIBE_USER_SCRAM_CREDENTIALS, 0,
         kio(v.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=None),
         describe.DescribeUserScramCredentials(None),
         describe.DescribeUserScramCredentialsResult(31, "no"),
         "00000014003200000000000700076f64726164656b000000",
         "00000010000000070000000000001f036e6f0100"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)
