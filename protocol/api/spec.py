"""An API's declaration: its key, name, request and response classes and supported versions.

Each module of protocol/api/ declares its APIs as `ApiSpec` constants; protocol/api/__init__.py
puts them in one table by key (`APIS`), which protocol/registry.py looks requests up in.
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
