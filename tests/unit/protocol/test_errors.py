"""The error table: one row per wire code, classes built from it, Kafka's names and numbers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from protocol import errors
from protocol.batch import InvalidBatchError
from protocol.errors import (
    ERROR_TABLE,
    OdradekError,
    ProtocolError,
    UnknownServerError,
    UsageError,
    for_code,
    for_name,
    raise_for_code,
    spec_for_code,
)
from protocol.framing import BadFrameLengthError, FrameTooLargeError
from protocol.schema import SchemaError

KAFKA_CODES = {
    "OFFSET_OUT_OF_RANGE": 1,
    "CORRUPT_MESSAGE": 2,
    "UNKNOWN_TOPIC_OR_PARTITION": 3,
    "NOT_LEADER_FOR_PARTITION": 6,
    "REQUEST_TIMED_OUT": 7,
    "MESSAGE_TOO_LARGE": 10,
    "STALE_CONTROLLER_EPOCH": 11,
    "COORDINATOR_LOAD_IN_PROGRESS": 14,
    "NOT_COORDINATOR": 16,
    "NOT_ENOUGH_REPLICAS": 19,
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": 20,
    "ILLEGAL_GENERATION": 22,
    "UNKNOWN_MEMBER_ID": 25,
    "REBALANCE_IN_PROGRESS": 27,
    "INVALID_TXN_STATE": 48,
    "TRANSACTION_COORDINATOR_FENCED": 52,
    "UNSUPPORTED_VERSION": 35,
    "INVALID_REQUEST": 42,
    "KAFKA_STORAGE_ERROR": 56,
    "FENCED_LEADER_EPOCH": 74,
}


def all_subclasses(cls: type[OdradekError]) -> list[type[OdradekError]]:
    out: list[type[OdradekError]] = []
    for sub in cls.__subclasses__():
        out += [sub, *all_subclasses(sub)]
    return out


def test_codes_and_names_are_unique() -> None:
    codes = [spec.code for spec in ERROR_TABLE]
    names = [spec.name for spec in ERROR_TABLE]
    assert len(codes) == len(set(codes))
    assert len(names) == len(set(names))


def test_kafka_names_and_numbers() -> None:
    table = {spec.name: spec.code for spec in ERROR_TABLE}
    for name, code in KAFKA_CODES.items():
        assert table[name] == code, name


# Kafka's names (ours) where kafka-python spells them its own way
KAFKA_PYTHON_SPELLING = {
    "UNKNOWN_SERVER_ERROR": "UNKNOWN",
    "NONE": "NO_ERROR",
    "MESSAGE_TOO_LARGE": "MESSAGE_SIZE_TOO_LARGE",
    "INVALID_TOPIC_EXCEPTION": "INVALID_TOPIC",
    "INVALID_REPLICA_ASSIGNMENT": "INVALID_REPLICATION_ASSIGNMENT",
}


def test_every_code_means_what_it_means_in_kafka() -> None:
    """Each row's number against kafka-python's table of Kafka's codes: a Kafka client reads
    the code, not our name (54 is SECURITY_DISABLED, 56 KAFKA_STORAGE_ERROR); a code newer than
    kafka-python's table (128, Kafka 4.0's) against kio's, generated from Kafka's own."""
    import kafka.errors as ke
    from kio.schema.errors import ErrorCode

    kafka = {
        c.errno: c.message
        for c in vars(ke).values()
        if isinstance(c, type) and issubclass(c, ke.BrokerResponseError) and c.errno is not None
    }
    for spec in ERROR_TABLE:
        if spec.code not in kafka:
            assert ErrorCode(spec.code).name.upper() == spec.name, spec
            continue
        assert kafka.get(spec.code) == KAFKA_PYTHON_SPELLING.get(spec.name, spec.name), spec


def test_every_row_has_a_class_with_its_fields() -> None:
    for spec in ERROR_TABLE:
        if spec.code == 0:
            continue
        cls = for_code(spec.code)
        assert for_name(spec.name) is cls
        assert spec_for_code(spec.code) == spec
        assert issubclass(cls, OdradekError)
        assert (cls.code, cls.name, cls.retriable) == (spec.code, spec.name, spec.retriable)
        assert cls.invalid_metadata == spec.invalid_metadata
        assert cls.default_message == spec.message and spec.message
        error = cls()
        assert error.message == spec.message
        assert str(error) == f"{spec.name}: {spec.message}"
        assert cls("detail").message == "detail"


def test_every_subclass_named_in_the_table_matches_its_row() -> None:
    rows = {spec.name: spec for spec in ERROR_TABLE}
    checked = 0
    for cls in all_subclasses(OdradekError):
        if not cls.__module__.startswith("protocol."):
            continue  # other packages' local errors (UsageError's kin) are not wire codes
        spec = rows.get(cls.name)
        if spec is None:
            assert cls is UsageError, f"{cls.__name__} has a name outside the table"
            continue
        checked += 1
        assert (cls.code, cls.retriable) == (spec.code, spec.retriable), cls.__name__
        assert cls.default_message, cls.__name__  # subclasses may say more than their row
    assert checked >= len(ERROR_TABLE) - 1


def test_every_row_class_is_declared_for_type_checkers() -> None:
    source = ast.parse(Path(errors.__file__).read_text())
    declared = {node.name for node in source.body if isinstance(node, ast.ClassDef)}
    for spec in ERROR_TABLE:
        if spec.code != 0:
            cls = for_code(spec.code)
            assert cls.__name__ in declared, spec.name
            assert getattr(errors, cls.__name__) is cls


def test_unknown_code_is_unknown_server_error() -> None:
    assert for_code(12345) is UnknownServerError
    assert for_code(-1) is UnknownServerError
    with pytest.raises(UnknownServerError):
        raise_for_code(9999, "from a newer broker")
    raise_for_code(0)  # NONE: no error


@pytest.mark.parametrize(
    ("name", "retriable"),
    [
        ("NOT_LEADER_FOR_PARTITION", True),
        ("REQUEST_TIMED_OUT", True),
        ("NOT_ENOUGH_REPLICAS", True),
        ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", True),
        ("COORDINATOR_LOAD_IN_PROGRESS", True),
        ("OFFSET_OUT_OF_RANGE", False),
        ("INVALID_REQUEST", False),
        ("MESSAGE_TOO_LARGE", False),
        ("STALE_CONTROLLER_EPOCH", False),
        # share groups (KIP-932): a lost share session is retried with a new one
        ("INVALID_RECORD_STATE", False),
        ("SHARE_SESSION_NOT_FOUND", True),
        ("INVALID_SHARE_SESSION_EPOCH", True),
        ("FENCED_STATE_EPOCH", False),
        ("SHARE_SESSION_LIMIT_REACHED", True),
    ],
)
def test_retriable_flags(name: str, retriable: bool) -> None:
    assert for_name(name).retriable is retriable


def test_raise_for_code_raises_the_class() -> None:
    with pytest.raises(errors.NotLeaderForPartitionError, match="not the leader"):
        raise_for_code(6)
    with pytest.raises(errors.OffsetOutOfRangeError, match="offset 5"):
        raise_for_code(1, "offset 5")


def test_protocol_errors_answer_invalid_request() -> None:
    for cls in (ProtocolError, SchemaError, FrameTooLargeError, BadFrameLengthError):
        assert cls.code == 42 and cls.name == "INVALID_REQUEST"
        assert not cls.retriable
    assert InvalidBatchError.code == 2 and issubclass(InvalidBatchError, errors.CorruptMessageError)
    assert UsageError.name == "USAGE_ERROR" and not issubclass(UsageError, ProtocolError)
