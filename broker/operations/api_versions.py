"""ApiVersions (Kafka door only): the APIs and version ranges this broker serves, which
clients pick their versions from. Every principal may ask (it comes before authentication:
Kafka checks no ACL).

The list is the Kafka door's column of the table (broker/apis.py's `KAFKA_SERVED`), given to
`answering` by the table, since an operation imports no table. A version this broker does
not serve is answered UNSUPPORTED_VERSION with the list (KIP-511), so that the client asks
again with one it has; the codec hands such a request over unread.

Feature flags (KIP-584, v3+): the features this broker supports, with their version ranges, and
the level the cluster has finalized for each, which clients act on. `transaction.version` 2 is
finalized (KIP-890 part 2): a Kafka 4 producer then ends each transaction with EndTxn v5 (the
epoch is bumped at every end) and adds partitions by producing (Produce v12); a client that
does not know the feature, or reads it below 2, keeps transaction version 1. Kafka writes a
finalized level at min = max = level, and leaves out a level 0; odradek has one feature
level for good, so its epoch (FinalizedFeaturesEpoch, which only grows) is 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.session import Session
from protocol.errors import UnsupportedVersionError

API = "ApiVersions"
SUPPORTED_FEATURES: tuple[tuple[str, int, int], ...] = (("transaction.version", 0, 2),)
FINALIZED_FEATURES: tuple[tuple[str, int], ...] = (("transaction.version", 2),)
FINALIZED_FEATURES_EPOCH = 0


@dataclass(frozen=True, slots=True)
class ApiVersions:
    version_served: bool  # False: a version this broker does not serve (its body unread)


@dataclass(frozen=True, slots=True)
class ApiVersionsResult:
    error_code: int
    apis: tuple[tuple[int, int, int], ...]  # (api key, min version, max version) by key
    supported_features: tuple[tuple[str, int, int], ...] = ()  # (name, min, max)
    finalized_features: tuple[tuple[str, int], ...] = ()  # (name, level)
    finalized_features_epoch: int = -1


Run = Callable[[BrokerContext, Session, ApiVersions], ApiVersionsResult]


def answering(served: Mapping[int, tuple[int, int]]) -> Run:
    """The operation, listing `served` (api key -> (min, max)) as it is when asked."""

    def run(ctx: BrokerContext, session: Session, req: ApiVersions) -> ApiVersionsResult:
        apis = tuple((key, lo, hi) for key, (lo, hi) in sorted(served.items()))
        code = 0 if req.version_served else UnsupportedVersionError.code
        return ApiVersionsResult(code, apis, SUPPORTED_FEATURES, FINALIZED_FEATURES,
                                 FINALIZED_FEATURES_EPOCH)  # fmt: skip

    return run
