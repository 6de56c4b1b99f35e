"""SCRAM credential administration, KIP-554, at Kafka's api keys: DescribeUserScramCredentials
(50) and AlterUserScramCredentials (51). Fields follow Kafka's v0.

`mechanism` is KIP-554's byte: 1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512 (0 is UNKNOWN). An
upsertion carries no password: the client salts and iterates it (`salted_password` =
Hi(password, salt, iterations)) and the broker derives the stored and server keys from that
(protocol/scram.py `credential_from_salted_password`). A salted password still lets its holder
log in, so it is kept out of reprs (and so out of logs).

Errors per user, as Kafka: an empty user name or iterations outside 4096..16384 is
UNACCEPTABLE_CREDENTIAL, an unknown mechanism UNSUPPORTED_SASL_MECHANISM, a user named twice
DUPLICATE_RESOURCE, deleting or describing what does not exist RESOURCE_NOT_FOUND; without
Cluster Alter (alter) or Cluster Describe (describe), CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.api.spec import ApiSpec


@dataclass(frozen=True, slots=True)
class ScramCredentialDeletion:
    name: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class ScramCredentialUpsertion:
    name: str
    mechanism: int
    iterations: int
    salt: bytes = field(repr=False)
    salted_password: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentialsRequest:
    deletions: list[ScramCredentialDeletion]
    upsertions: list[ScramCredentialUpsertion]


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentialsResult:
    user: str
    error_code: int
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentialsResponse:
    results: list[AlterUserScramCredentialsResult]


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsRequest:
    users: list[str] | None  # None or empty: every user that has a credential


@dataclass(frozen=True, slots=True)
class CredentialInfo:
    mechanism: int
    iterations: int


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsResult:
    user: str
    error_code: int
    error_message: str | None
    credential_infos: list[CredentialInfo]


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsResponse:
    error_code: int
    error_message: str | None
    results: list[DescribeUserScramCredentialsResult]


DESCRIBE_USER_SCRAM_CREDENTIALS = ApiSpec(
    50,
    "DescribeUserScramCredentials",
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
ALTER_USER_SCRAM_CREDENTIALS = ApiSpec(
    51,
    "AlterUserScramCredentials",
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)
