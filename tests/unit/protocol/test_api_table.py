"""protocol/api/__init__.py's table: every ApiSpec a module of protocol/api/ declares is in it,
once, and a key or request class declared twice is refused when the table is built."""

from __future__ import annotations

import pytest

import protocol.api as api
from protocol.api import APIS, BY_KEY, BY_REQUEST, _index
from protocol.api.spec import ApiSpec
from protocol.registry import all_specs, spec_for_key, spec_for_request


def _declared() -> list[ApiSpec]:
    found = []
    for name in api.__all__:
        module = getattr(api, name)
        if name.isupper() or not hasattr(module, "__file__"):
            continue
        found += [v for v in vars(module).values() if isinstance(v, ApiSpec)]
    return found


def test_every_declared_api_is_in_the_table_once() -> None:
    declared = {id(s): s for s in _declared()}
    assert len(declared) >= 46  # the APIs of today, more later
    assert sorted(declared.values(), key=lambda s: s.key) == sorted(APIS, key=lambda s: s.key)
    assert len(BY_KEY) == len(BY_REQUEST) == len(APIS)
    assert all_specs() == sorted(APIS, key=lambda s: s.key)
    for spec in APIS:
        assert spec_for_key(spec.key) is spec
        assert spec_for_request(spec.request) is spec


class _A:
    pass


class _B:
    pass


def test_a_key_or_request_declared_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="api key 7 declared twice"):
        _index((ApiSpec(7, "A", _A, _A), ApiSpec(7, "B", _B, _B)))
    with pytest.raises(ValueError, match="_A is already the request of another api"):
        _index((ApiSpec(7, "A", _A, _A), ApiSpec(8, "B", _A, _B)))
