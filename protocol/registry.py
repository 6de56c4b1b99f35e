"""The API registry: api key -> (name, request class, response class, supported versions).

Each file in protocol/api/ declares its request and response dataclasses and its `ApiSpec`s
(protocol/api/spec.py); protocol/api/__init__.py gathers them into one table by key. This
module answers lookups in that table. Adding an API is adding one such file, or a declaration
in one, a row in that table (and one broker handler).
"""

from __future__ import annotations

from protocol.api import APIS, BY_KEY, BY_REQUEST
from protocol.api.spec import ApiSpec

__all__ = ["ApiSpec", "all_specs", "spec_for_key", "spec_for_request"]


def spec_for_key(key: int) -> ApiSpec | None:
    return BY_KEY.get(key)


def spec_for_request(request_cls: type) -> ApiSpec:
    return BY_REQUEST[request_cls]


def all_specs() -> list[ApiSpec]:
    return sorted(APIS, key=lambda s: s.key)
