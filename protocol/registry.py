"""The API registry: api key -> (name, request class, response class, supported versions).

Each file in protocol/api/ declares its request and response dataclasses and registers them
with `register(...)`. Adding an API is adding one such file (and one broker handler).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ApiSpec:
    key: int
    name: str
    request: type
    response: type
    min_version: int = 0
    max_version: int = 0

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


_BY_KEY: dict[int, ApiSpec] = {}
_BY_REQUEST: dict[type, ApiSpec] = {}


def register(spec: ApiSpec) -> ApiSpec:
    if spec.key in _BY_KEY:
        raise ValueError(f"api key {spec.key} registered twice")
    if spec.request in _BY_REQUEST:
        raise ValueError(f"{spec.request.__name__} is already the request of another api")
    _BY_KEY[spec.key] = spec
    _BY_REQUEST[spec.request] = spec
    return spec


def spec_for_key(key: int) -> ApiSpec | None:
    _load_all()
    return _BY_KEY.get(key)


def spec_for_request(request_cls: type) -> ApiSpec:
    _load_all()
    return _BY_REQUEST[request_cls]


def all_specs() -> list[ApiSpec]:
    _load_all()
    return sorted(_BY_KEY.values(), key=lambda s: s.key)


_loaded = False


def _load_all() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        import protocol.api  # noqa: F401  (registers every API)
