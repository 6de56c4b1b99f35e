"""deploy/transactions_cli.py's pure parts: the rows of each table under Kafka's column names,
absent values as "-", abort's lookup by start offset, and one-line argument errors."""

from __future__ import annotations

import pytest

from client.txn_admin import HangingTxn, ListedTxn, TxnDescription
from client.types import TopicPartition
from deploy import cli
from deploy.cli_output import table_lines
from deploy.transactions_cli import (
    DESCRIBE_COLUMNS,
    LIST_COLUMNS,
    PRODUCER_COLUMNS,
    NoSuchTransactionError,
    describe_row,
    hanging_rows,
    list_rows,
    producer_for_offset,
    producer_rows,
)
from protocol.api.txn import ProducerState


def test_list_table_has_kafkas_columns() -> None:
    rows = list_rows([ListedTxn("tx-a", 7, "Ongoing", 2), ListedTxn("b", 8, "Empty", 1)])
    assert table_lines(LIST_COLUMNS, rows) == [
        "TransactionalId  Coordinator  ProducerId  TransactionState",
        "tx-a             2            7           Ongoing",
        "b                1            8           Empty",
    ]


def test_describe_row_gives_the_duration_and_the_partitions() -> None:
    d = TxnDescription(1, "tx", 7, 0, "Ongoing", 60000, 1000,
                       [TopicPartition("t", 0), TopicPartition("t", 2)])  # fmt: skip
    row = describe_row(d, 4500)
    assert row == (1, "tx", 7, 0, "Ongoing", 60000, 1000, 3500, "t-0,t-2")
    assert len(row) == len(DESCRIBE_COLUMNS)
    idle = TxnDescription(1, "tx", 7, 0, "Empty", 60000, -1, [])
    assert describe_row(idle, 4500)[-3:] == (None, None, None)  # shown as "-"


def test_producer_rows_sorted_with_absent_values_as_dashes() -> None:
    rows = producer_rows([ProducerState(9, 1, 5, 100, 3, 42), ProducerState(2, 0, -1, -1, -1, -1)])
    assert table_lines(PRODUCER_COLUMNS, rows)[1:] == [
        "2           0              -                       -             -              -",
        "9           1              3                       5             100            42",
    ]


def test_hanging_rows_show_minutes() -> None:
    h = HangingTxn("t", 0, 7, 1, 2, 40, 1000, 3 * 60_000 + 59_000, None, "why")
    assert hanging_rows([h]) == [("t", 0, 7, 1, 2, 40, 1000, 3, None, "why")]


def test_abort_finds_the_producer_by_its_start_offset() -> None:
    a, b = ProducerState(1, 0, 3, 10, 0, 40), ProducerState(2, 0, 3, 10, 0, -1)
    assert producer_for_offset([b, a], 40, "t-0") is a
    wrong = r"offset 41 \(open ones start at 40 \(producer 1\)\)"
    with pytest.raises(NoSuchTransactionError, match=wrong):
        producer_for_offset([a, b], 41, "t-0")
    with pytest.raises(NoSuchTransactionError, match="none is open"):
        producer_for_offset([b], 41, "t-0")


@pytest.mark.parametrize(
    "argv, says",
    [
        (["abort", "--topic", "t", "--partition", "0"], "give --start-offset N"),
        (
            [
                "abort",
                "--topic",
                "t",
                "--partition",
                "0",
                "--start-offset",
                "3",
                "--producer-id",
                "1",
            ],
            "give --start-offset N",
        ),
        (["find-hanging", "--partition", "0"], "--partition needs --topic"),
        (["find-hanging", "--topic", "t", "--broker-id", "1"], "not both"),
        (["list", "--state", "Going"], "'Going' is not a state"),
        (["describe-producers", "--topic", "t", "--partition", "x"], "is not an integer"),
        (["describe"], "--transactional-id"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = cli.main(["--bootstrap", "127.0.0.1:1", "transactions", *argv])
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2
    assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
