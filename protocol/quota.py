"""Client quota entities and keys (KIP-55, KIP-257), as Kafka's ZooKeeper-era brokers keep them.

An entity is a user, a client id, or both; either part may be the default (`DEFAULT`, written
"<default>" in ZooKeeper and null on the wire). Its ZooKeeper config node and the
`entity_path` of its change notification (/config/changes):

    user alice                 /config/users/alice                "users/alice"
    user alice, client app     /config/users/alice/clients/app    "users/alice/clients/app"
    client app                 /config/clients/app                "clients/app"
    default user               /config/users/<default>            "users/<default>"

Names are sanitized as Kafka's `Sanitizer` does (URL-encoded, with "*" and " " as "%2A" and
"%20") so that any user or client id is one path segment.

For a connection of user U and client id C, the quota that applies is the first one set in
KIP-55's order (`RESOLUTION_ORDER`): (U, C), (U, <default>), (U), (<default>, C),
(<default>, <default>), (<default>), (C), (<default> client). `resolve` is that walk, a pure
function of the overrides set; broker/quota/manager.py uses it.

`entity_from_wire` and `apply_ops` are AlterClientQuotas' checks (Kafka's ZkAdminManager): an
empty entity, an unknown or repeated entity type, an empty name, the ip type (not served), an
unknown key (controller_mutation_rate too: not enforced here), a value that is not positive or
not a whole number for the byte rates is INVALID_REQUEST with why.
"""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from protocol.errors import InvalidRequestError

DEFAULT: Final = "<default>"  # ZooKeeper's name of the default entity (ZooKeeperInternals)

USER = "user"  # Kafka's ClientQuotaEntity.USER
CLIENT_ID = "client-id"  # ClientQuotaEntity.CLIENT_ID
IP = "ip"  # ClientQuotaEntity.IP: connection rate quotas, not served here

PRODUCER_BYTE_RATE = "producer_byte_rate"  # bytes/s a client may produce
CONSUMER_BYTE_RATE = "consumer_byte_rate"  # bytes/s a client may fetch
REQUEST_PERCENTAGE = "request_percentage"  # % of one handler thread's time, per window
# KIP-599's partition mutations per second: a Kafka quota key odradek does not enforce, so it
# is refused (INVALID_REQUEST saying so) rather than stored and ignored
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"

# key -> True when the value must be a whole number (Kafka's LONG), False for a DOUBLE
QUOTA_KEYS: Final[dict[str, bool]] = {
    PRODUCER_BYTE_RATE: True,
    CONSUMER_BYTE_RATE: True,
    REQUEST_PERCENTAGE: False,
}

# Kafka's match types in DescribeClientQuotas filter components
MATCH_EXACT = 0  # the entity named `match`
MATCH_DEFAULT = 1  # the default entity
MATCH_SPECIFIED = 2  # any named entity (not the default)


def sanitize(name: str) -> str:
    """Kafka's Sanitizer.sanitize: a name as one ZooKeeper path segment."""
    return urllib.parse.quote(name, safe="-_.").replace("~", "%7E")


def desanitize(name: str) -> str:
    return urllib.parse.unquote_plus(name)


@dataclass(frozen=True, slots=True)
class QuotaEntity:
    """A quota entity: `user` and `client_id` are a name, DEFAULT, or None (not part of it)."""

    user: str | None = None
    client_id: str | None = None

    def __post_init__(self) -> None:
        if self.user is None and self.client_id is None:
            raise InvalidRequestError("Invalid empty client quota entity")

    @property
    def config_path(self) -> str:
        """The entity's config node in ZooKeeper."""
        return "/config/" + self.entity_path

    @property
    def entity_path(self) -> str:
        """The entity as a change notification names it ("users/alice/clients/app")."""
        if self.user is None:
            return f"clients/{_segment(self.client_id)}"
        if self.client_id is None:
            return f"users/{_segment(self.user)}"
        return f"users/{_segment(self.user)}/clients/{_segment(self.client_id)}"

    @classmethod
    def from_entity_path(cls, path: str) -> QuotaEntity | None:
        """The entity a notification or a config node names; None when it names none."""
        parts = path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "users" and parts[1]:
            return cls(user=_name(parts[1]))
        if len(parts) == 2 and parts[0] == "clients" and parts[1]:
            return cls(client_id=_name(parts[1]))
        if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients" and parts[1]:
            return cls(user=_name(parts[1]), client_id=_name(parts[3])) if parts[3] else None
        return None

    def wire(self) -> list[tuple[str, str | None]]:
        """(entity type, name or None for the default), as AlterClientQuotas names them."""
        out: list[tuple[str, str | None]] = []
        if self.user is not None:
            out.append((USER, None if self.user == DEFAULT else self.user))
        if self.client_id is not None:
            out.append((CLIENT_ID, None if self.client_id == DEFAULT else self.client_id))
        return out

    def __str__(self) -> str:
        parts = []
        if self.user is not None:
            parts.append("default user" if self.user == DEFAULT else f"user {self.user}")
        if self.client_id is not None:
            default = self.client_id == DEFAULT
            parts.append("default client-id" if default else f"client-id {self.client_id}")
        return ", ".join(parts)


def _segment(name: str | None) -> str:
    assert name is not None
    return DEFAULT if name == DEFAULT else sanitize(name)


def _name(segment: str) -> str:
    return DEFAULT if segment == DEFAULT else desanitize(segment)


def entity_from_wire(parts: Iterable[tuple[str, str | None]]) -> QuotaEntity:
    """AlterClientQuotas' entity (type, name or None) pairs -> QuotaEntity; INVALID_REQUEST
    for what Kafka refuses."""
    user: str | None = None
    client_id: str | None = None
    seen: set[str] = set()
    for entity_type, name in parts:
        if entity_type in seen:
            raise InvalidRequestError(f"Duplicate {entity_type} entity type in quota entity")
        seen.add(entity_type)
        if name is not None and not name:
            raise InvalidRequestError(f"Empty {entity_type} not supported")
        if entity_type == USER:
            user = DEFAULT if name is None else name
        elif entity_type == CLIENT_ID:
            client_id = DEFAULT if name is None else name
        elif entity_type == IP:
            raise InvalidRequestError("IP quota entities (connection_creation_rate) are not served")
        else:
            raise InvalidRequestError(f"Unhandled client quota entity type: {entity_type}")
    return QuotaEntity(user, client_id)


def normalize_value(key: str, value: float) -> str:
    """The value of `key` as ZooKeeper keeps it (a LONG as an integer string); INVALID_REQUEST
    for an unknown key or a value Kafka would refuse."""
    whole = QUOTA_KEYS.get(key)
    if key == CONTROLLER_MUTATION_RATE:
        raise InvalidRequestError(f"{key} (KIP-599) is not enforced by odradek: not set")
    if whole is None:
        raise InvalidRequestError(f"Invalid configuration key {key}")
    if not math.isfinite(value) or value <= 0:
        raise InvalidRequestError(f"Configuration {key} must be a positive number, not {value}")
    if not whole:
        return repr(float(value))
    as_int = int(value + 1e-6)
    if abs(as_int - value) > 1e-6:
        raise InvalidRequestError(f"Configuration {key} must be a LONG value")
    return str(as_int)


def apply_ops(
    current: Mapping[str, str], ops: Iterable[tuple[str, float | None]]
) -> dict[str, str]:
    """The entity's config after AlterClientQuotas' ops ((key, value) to set, (key, None) to
    remove). Keys that are not quota keys (SCRAM credentials of the same user node) are kept."""
    out = dict(current)
    for key, value in ops:
        if value is None:
            if key not in QUOTA_KEYS:
                raise InvalidRequestError(f"Invalid configuration key {key}")
            out.pop(key, None)
        else:
            out[key] = normalize_value(key, value)
    return out


def quota_values(config: Mapping[str, str]) -> dict[str, float]:
    """The quota keys of an entity's config node, as numbers (others, e.g. SCRAM, left out)."""
    out: dict[str, float] = {}
    for key, text in config.items():
        if key in QUOTA_KEYS:
            try:
                out[key] = float(text)
            except ValueError:
                continue  # not a number: a hand-edited node; Kafka would not load it either
    return out


# ----- resolution (KIP-55) ----------------------------------------------------------------------


def resolution_order(user: str, client_id: str) -> list[QuotaEntity]:
    """The entities whose quota may apply to (user, client_id), most specific first."""
    return [
        QuotaEntity(user, client_id),
        QuotaEntity(user, DEFAULT),
        QuotaEntity(user, None),
        QuotaEntity(DEFAULT, client_id),
        QuotaEntity(DEFAULT, DEFAULT),
        QuotaEntity(DEFAULT, None),
        QuotaEntity(None, client_id),
        QuotaEntity(None, DEFAULT),
    ]


def resolve(
    overrides: Mapping[QuotaEntity, float], user: str, client_id: str
) -> tuple[QuotaEntity, float] | None:
    """The first entity in KIP-55's order with a quota set, and that quota; None when none."""
    for entity in resolution_order(user, client_id):
        value = overrides.get(entity)
        if value is not None:
            return entity, value
    return None


# ----- DescribeClientQuotas filters -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FilterComponent:
    entity_type: str
    match_type: int  # MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED
    match: str | None = None


def check_filter(components: Iterable[FilterComponent]) -> dict[str, FilterComponent]:
    """The components by entity type; INVALID_REQUEST as Kafka for a bad filter."""
    by_type: dict[str, FilterComponent] = {}
    for c in components:
        if c.entity_type == "":
            raise InvalidRequestError("Unexpected empty filter component entity type")
        if c.entity_type not in (USER, CLIENT_ID, IP):
            raise InvalidRequestError(f"Custom entity type '{c.entity_type}' not supported")
        if c.entity_type in by_type:
            kind = {USER: "user", CLIENT_ID: "client", IP: "ip"}[c.entity_type]
            raise InvalidRequestError(f"Duplicate {kind} filter component entity type")
        if c.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            raise InvalidRequestError(f"Unknown match type {c.match_type}")
        if c.match_type == MATCH_EXACT and c.match is None:
            raise InvalidRequestError(f"Exact match of {c.entity_type} needs a name")
        by_type[c.entity_type] = c
    if IP in by_type and len(by_type) > 1:
        raise InvalidRequestError(
            "Invalid entity filter component combination, IP filter component should not be "
            "used with user or clientId filter component."
        )
    return by_type


def _matches(component: FilterComponent | None, name: str | None, strict: bool) -> bool:
    if component is None:
        return name is None or not strict
    if name is None:
        return False
    if component.match_type == MATCH_DEFAULT:
        return name == DEFAULT
    if component.match_type == MATCH_SPECIFIED:
        return name != DEFAULT
    return name == component.match


def filter_matches(
    by_type: Mapping[str, FilterComponent], strict: bool, entity: QuotaEntity
) -> bool:
    """Whether DescribeClientQuotas' filter selects `entity` (Kafka's `matches`)."""
    if IP in by_type:
        return False  # no ip entities are kept
    return _matches(by_type.get(USER), entity.user, strict) and _matches(
        by_type.get(CLIENT_ID), entity.client_id, strict
    )
