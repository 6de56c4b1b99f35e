"""The helpers the CLI modules share (deploy/cli_common.py), and that no CLI module reaches
into another's private names."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from deploy import cli, cli_common

DEPLOY = Path(cli_common.__file__).parent


def test_number_types() -> None:
    assert cli_common.positive_int("3") == 3
    assert cli_common.non_negative_int("0") == 0
    for parse, bad in [
        (cli_common.positive_int, "0"),
        (cli_common.positive_int, "x"),
        (cli_common.non_negative_int, "-1"),
        (cli_common.non_negative_int, "1.5"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(bad)


def test_bootstrap_from_args_prefers_the_flag(tmp_path: Path) -> None:
    args = argparse.Namespace(bootstrap="h:1, g:02")
    assert cli_common.bootstrap_from_args(args) == "h:1,g:2"


def test_cli_keeps_its_public_names() -> None:
    # deploy/cli.py's public helpers stay importable from it (examples/, tests).
    assert cli.resolve_bootstrap is cli_common.resolve_bootstrap
    assert cli.parse_bootstrap is cli_common.parse_bootstrap
    assert cli.format_partition is cli_common.format_partition
    assert cli.BOOTSTRAP_ENV == "ODRADEK_BOOTSTRAP"


@pytest.mark.parametrize("path", sorted(DEPLOY.glob("*.py")), ids=lambda p: p.name)
def test_no_module_uses_another_modules_private_names(path: Path) -> None:
    tree = ast.parse(path.read_text())
    siblings: set[str] = set()  # deploy modules imported as `from deploy import cli`
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("deploy"):
            assert not [a.name for a in node.names if a.name.startswith("_")], ast.dump(node)
            if node.module == "deploy":
                siblings |= {a.asname or a.name for a in node.names}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in siblings
        ):
            assert not node.attr.startswith("_"), f"{path.name}:{node.lineno}: {node.attr}"
