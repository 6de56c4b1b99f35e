"""`odradek schemas`: where it finds the registry, and a refused request as one line."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from deploy.cli import main
from deploy.schemas_cli import registry_urls, schema_type
from protocol.errors import UsageError


def test_registry_flag_else_the_local_cluster(tmp_path: Path) -> None:
    given = argparse.Namespace(registry="http://a:1/, http://b:2", dir=None)
    assert registry_urls(given) == ["http://a:1", "http://b:2"]
    with pytest.raises(UsageError, match="no --registry and no local cluster"):
        registry_urls(argparse.Namespace(registry=None, dir=str(tmp_path)))


def test_an_unreachable_registry_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schemas", "list", "--registry", "http://127.0.0.1:1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("odradek: error: schema registry http://127.0.0.1:1")


@pytest.mark.parametrize(("file", "given", "sent"), [
    ("order.avsc", None, "AVRO"), ("-", None, "AVRO"), ("order.json", None, "JSON"),
    ("order.PROTO", None, "PROTOBUF"), ("order.json", "avro", "AVRO"),
])  # fmt: skip
def test_the_schema_type_is_given_or_read_from_the_suffix(
    file: str, given: str | None, sent: str
) -> None:
    assert schema_type(argparse.Namespace(file=file, type=given)) == sent
