"""ApiVersions (Kafka door only): the APIs and version ranges this broker serves, which
clients pick their versions from. Every principal may ask (it comes before authentication:
Kafka checks no ACL).

The list is the Kafka door's column of the table (broker/apis.py's `KAFKA_SERVED`), given to
`answering` by the table, since an operation imports no table. A version this broker does
not serve is answered UNSUPPORTED_VERSION with the list (KIP-511), so that the client asks
again with one it has; the codec hands such a request over unread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.session import Session
from protocol.errors import UnsupportedVersionError

API = "ApiVersions"


@dataclass(frozen=True, slots=True)
class ApiVersions:
    version_served: bool  # False: a version this broker does not serve (its body unread)


@dataclass(frozen=True, slots=True)
class ApiVersionsResult:
    error_code: int
    apis: tuple[tuple[int, int, int], ...]  # (api key, min version, max version) by key


Run = Callable[[BrokerContext, Session, ApiVersions], ApiVersionsResult]


def answering(served: Mapping[int, tuple[int, int]]) -> Run:
    """The operation, listing `served` (api key -> (min, max)) as it is when asked."""

    def run(ctx: BrokerContext, session: Session, req: ApiVersions) -> ApiVersionsResult:
        apis = tuple((key, lo, hi) for key, (lo, hi) in sorted(served.items()))
        code = 0 if req.version_served else UnsupportedVersionError.code
        return ApiVersionsResult(code, apis)

    return run
