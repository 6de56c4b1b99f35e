"""The argument parser of every `odradek` command and of the deploy modules run with `python -m`.

It sits below deploy/cli_common.py (which gives it to the subcommand modules) so that a module
the local cluster imports (deploy/cluster_security.py's `main`) can use it without importing
the CLI helpers, which import the cluster.
"""

from __future__ import annotations

import argparse
from typing import NoReturn


class Parser(argparse.ArgumentParser):
    """argparse with its errors on one line, usage pointer included, exit code 2:
    `odradek topics create: error: argument --partitions: '0' must be positive (usage:
    odradek topics create --help)`. Subcommand parsers are made of the same class."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (usage: {self.prog} --help)\n")
