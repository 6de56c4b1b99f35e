"""The helpers the CLI modules share (deploy/cli_common.py), and that no CLI module reaches
into another's private names."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from deploy import cli_common

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


@pytest.mark.parametrize("path", sorted(DEPLOY.glob("*.py")), ids=lambda p: p.name)
def test_no_module_re_exports_a_name(path: Path) -> None:
    # `from m import X as X` hands on another module's name: callers and tests import it from
    # the module that defines it (deploy/cli_common.py, deploy/cli_lines.py, ...) instead.
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom | ast.Import):
            again = [a.name for a in node.names if a.asname == a.name.rpartition(".")[2]]
            assert not again, f"{path.name}:{node.lineno}: {again}"


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
