"""Every error odradek can put on the wire, in one table, and the exception classes built from it.

There is one root, `OdradekError`. Each wire error code becomes a subclass carrying its `code`,
its Kafka-style `name`, a `retriable` flag (the client retries these, within its delivery timeout)
and `invalid_metadata` (the client refreshes its metadata before retrying). `for_code(code)` finds
the class for a code read off the wire.

Two errors sit outside the table because they are never sent as codes:
- `ProtocolError`: a peer broke the wire protocol (bad frame, undecodable body). The broker
  answers INVALID_REQUEST where it can and closes the connection.
- `UsageError`: a user called the API wrongly (bad argument, bad CLI option). It is raised
  locally and never crosses the network.

Codes follow Kafka's numbering where the meaning is the same, so that ops engineers who know
Kafka read them at a glance.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    code: int
    name: str
    retriable: bool
    message: str
    invalid_metadata: bool = False


# fmt: off
ERROR_TABLE: tuple[ErrorSpec, ...] = (
    ErrorSpec(-1, "UNKNOWN_SERVER_ERROR", False, "The server hit an unexpected error."),
    ErrorSpec(0, "NONE", False, "No error."),
    ErrorSpec(1, "OFFSET_OUT_OF_RANGE", False,
              "The requested offset is outside the range of offsets kept for this partition."),
    ErrorSpec(2, "CORRUPT_MESSAGE", True,
              "The record batch failed its CRC check, or is otherwise malformed."),
    ErrorSpec(3, "UNKNOWN_TOPIC_OR_PARTITION", True,
              "This server does not host this topic-partition.", invalid_metadata=True),
    ErrorSpec(4, "INVALID_FETCH_SIZE", False, "The requested fetch size is invalid."),
    ErrorSpec(5, "LEADER_NOT_AVAILABLE", True,
              "There is no leader for this topic-partition (a leader election is under way, "
              "or the partition is offline).", invalid_metadata=True),
    ErrorSpec(6, "NOT_LEADER_FOR_PARTITION", True,
              "This server is not the leader for that topic-partition.", invalid_metadata=True),
    ErrorSpec(7, "REQUEST_TIMED_OUT", True, "The request timed out."),
    ErrorSpec(8, "BROKER_NOT_AVAILABLE", False, "The broker is not available."),
    ErrorSpec(9, "REPLICA_NOT_AVAILABLE", True,
              "The replica is not available for the requested topic-partition.",
              invalid_metadata=True),
    ErrorSpec(10, "MESSAGE_TOO_LARGE", False,
              "The record batch is larger than the maximum the server accepts."),
    ErrorSpec(11, "STALE_CONTROLLER_EPOCH", False,
              "The request came from a controller whose epoch is older than the current one."),
    ErrorSpec(12, "OFFSET_METADATA_TOO_LARGE", False,
              "The metadata field of the offset request was too large."),
    ErrorSpec(13, "NETWORK_EXCEPTION", True,
              "The server disconnected before a response was received.", invalid_metadata=True),
    ErrorSpec(14, "COORDINATOR_LOAD_IN_PROGRESS", True,
              "The coordinator is loading its state (CoordinatorStartupNotComplete)."),
    ErrorSpec(15, "COORDINATOR_NOT_AVAILABLE", True, "The coordinator is not available."),
    ErrorSpec(16, "NOT_COORDINATOR", True, "This is not the correct coordinator for the group."),
    ErrorSpec(17, "INVALID_TOPIC_EXCEPTION", False,
              "The topic name is invalid, or the request tried to write to an internal topic."),
    ErrorSpec(18, "RECORD_LIST_TOO_LARGE", False,
              "The request holds more record data than the server accepts at once."),
    ErrorSpec(19, "NOT_ENOUGH_REPLICAS", True,
              "Fewer in-sync replicas than min.insync.replicas: the write was refused."),
    ErrorSpec(20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True,
              "The write was appended, but the in-sync replica set shrank below "
              "min.insync.replicas before it was replicated."),
    ErrorSpec(21, "INVALID_REQUIRED_ACKS", False, "acks must be 0, 1 or -1 (all)."),
    ErrorSpec(22, "ILLEGAL_GENERATION", False,
              "The group generation in the request is not the current one: rejoin the group."),
    ErrorSpec(23, "INCONSISTENT_GROUP_PROTOCOL", False,
              "The member's assignment strategy does not match the group's."),
    ErrorSpec(24, "INVALID_GROUP_ID", False, "The group id is invalid."),
    ErrorSpec(25, "UNKNOWN_MEMBER_ID", False, "The coordinator does not know this member id."),
    ErrorSpec(26, "INVALID_SESSION_TIMEOUT", False,
              "The session timeout is outside the range the coordinator allows."),
    ErrorSpec(27, "REBALANCE_IN_PROGRESS", False,
              "The group is rebalancing: rejoin to take part."),
    ErrorSpec(28, "INVALID_COMMIT_OFFSET_SIZE", False,
              "The committed offset metadata is too large."),
    ErrorSpec(29, "TOPIC_AUTHORIZATION_FAILED", False, "Topic authorization failed."),
    ErrorSpec(30, "GROUP_AUTHORIZATION_FAILED", False, "Group authorization failed."),
    ErrorSpec(31, "CLUSTER_AUTHORIZATION_FAILED", False, "Cluster authorization failed."),
    ErrorSpec(32, "INVALID_TIMESTAMP", False,
              "A record's timestamp is outside the range the topic accepts "
              "(message.timestamp.before.max.ms / after.max.ms)."),
    ErrorSpec(33, "UNSUPPORTED_SASL_MECHANISM", False,
              "The broker does not support the requested SASL mechanism."),
    ErrorSpec(34, "ILLEGAL_SASL_STATE", False,
              "Request is not valid given the current SASL state."),
    ErrorSpec(35, "UNSUPPORTED_VERSION", False, "This server does not support that API version."),
    ErrorSpec(36, "TOPIC_ALREADY_EXISTS", False, "A topic with that name already exists."),
    ErrorSpec(37, "INVALID_PARTITIONS", False, "The number of partitions is invalid."),
    ErrorSpec(38, "INVALID_REPLICATION_FACTOR", False,
              "The replication factor is invalid (above the number of live brokers?)."),
    ErrorSpec(39, "INVALID_REPLICA_ASSIGNMENT", False, "The replica assignment is invalid."),
    ErrorSpec(40, "INVALID_CONFIG", False, "A configuration value is invalid."),
    ErrorSpec(41, "NOT_CONTROLLER", True,
              "This is not the controller: refresh metadata and retry.", invalid_metadata=True),
    ErrorSpec(42, "INVALID_REQUEST", False,
              "The request is malformed: a bad frame, a wrong type, or an unknown API."),
    # Retriable here (not in Kafka): a batch refused for a sequence gap is retried after the
    # batches before it, which the idempotent producer resends in sequence order.
    ErrorSpec(45, "OUT_OF_ORDER_SEQUENCE_NUMBER", True,
              "The broker received an out of order sequence number from an idempotent producer."),
    ErrorSpec(47, "INVALID_PRODUCER_EPOCH", False,
              "The producer's epoch is older than the one the broker has seen for its id."),
    ErrorSpec(48, "INVALID_TXN_STATE", False,
              "The producer attempted a transactional operation in an invalid state."),
    ErrorSpec(49, "INVALID_PRODUCER_ID_MAPPING", False,
              "The producer id is not the one the coordinator holds for this transactional id."),
    ErrorSpec(50, "INVALID_TRANSACTION_TIMEOUT", False,
              "The transaction timeout is above transaction.max.timeout.ms (or not positive)."),
    ErrorSpec(51, "CONCURRENT_TRANSACTIONS", True,
              "The coordinator is completing an earlier request for this transactional id: "
              "retry."),
    ErrorSpec(52, "TRANSACTION_COORDINATOR_FENCED", False,
              "A transaction marker came from a coordinator epoch older than one seen before "
              "(another transaction coordinator took over)."),
    ErrorSpec(53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False,
              "Transactional Id authorization failed (an ACL refuses it, or two-phase commit is "
              "turned off)."),
    ErrorSpec(54, "SECURITY_DISABLED", False, "Security features are disabled."),
    ErrorSpec(55, "OPERATION_NOT_ATTEMPTED", False,
              "The broker did not attempt to execute this operation (another part of the "
              "request failed first)."),
    # Kafka's KafkaStorageException is an InvalidMetadataException: clients refresh metadata,
    # since the controller moves leadership away from a failed log directory.
    ErrorSpec(56, "KAFKA_STORAGE_ERROR", True, "Disk error when accessing the log.",
              invalid_metadata=True),
    ErrorSpec(57, "LOG_DIR_NOT_FOUND", False,
              "The user-specified log directory is not found in the broker config."),
    ErrorSpec(58, "SASL_AUTHENTICATION_FAILED", False, "SASL Authentication failed."),
    ErrorSpec(68, "NON_EMPTY_GROUP", False, "The group is not empty."),
    ErrorSpec(69, "GROUP_ID_NOT_FOUND", False, "The group id does not exist."),
    ErrorSpec(70, "FETCH_SESSION_ID_NOT_FOUND", True,
              "The fetch session is not known to the leader (evicted, or the leader restarted)."),
    ErrorSpec(71, "INVALID_FETCH_SESSION_EPOCH", True,
              "The fetch session's epoch is not the one the leader expects next."),
    ErrorSpec(72, "LISTENER_NOT_FOUND", True,
              "The leader has no listener of the kind the request came in on.",
              invalid_metadata=True),
    ErrorSpec(74, "FENCED_LEADER_EPOCH", True,
              "The leader epoch in the request is older than the broker's.", invalid_metadata=True),
    ErrorSpec(75, "UNKNOWN_LEADER_EPOCH", True,
              "The leader epoch in the request is newer than the broker's.", invalid_metadata=True),
    ErrorSpec(78, "OFFSET_NOT_AVAILABLE", True,
              "The leader's high watermark has not reached the start of its epoch since its "
              "election: offsets could go backwards (KIP-207)."),
    ErrorSpec(79, "MEMBER_ID_REQUIRED", False,
              "The group member needs a member id: rejoin with the one given (KIP-394)."),
    ErrorSpec(80, "PREFERRED_LEADER_NOT_AVAILABLE", True,
              "The preferred replica is not alive or not in the ISR: it cannot lead now."),
    ErrorSpec(84, "ELECTION_NOT_NEEDED", False, "The preferred leader already leads."),
    ErrorSpec(81, "GROUP_MAX_SIZE_REACHED", False, "The group has as many members as allowed."),
    ErrorSpec(82, "FENCED_INSTANCE_ID", False,
              "Another member with the same group instance id took over (static membership, "
              "KIP-345): this one is fenced."),
    ErrorSpec(85, "NO_REASSIGNMENT_IN_PROGRESS", False,
              "No reassignment of that partition is in progress."),
    ErrorSpec(86, "GROUP_SUBSCRIBED_TO_TOPIC", False,
              "The group's members are subscribed to the topic: its offsets cannot be deleted."),
    ErrorSpec(87, "INVALID_RECORD", False,
              "The batch failed the broker's checks on what a client may produce."),
    ErrorSpec(88, "UNSTABLE_OFFSET_COMMIT", True,
              "An open transaction holds an offset commit for the partition: retry (KIP-447)."),
    ErrorSpec(89, "THROTTLING_QUOTA_EXCEEDED", True, "A limit was reached: back off and retry."),
    ErrorSpec(90, "PRODUCER_FENCED", False,
              "A newer producer with the same transactional id took over (its epoch is newer)."),
    ErrorSpec(91, "RESOURCE_NOT_FOUND", False,
              "A request illegally referred to a resource that does not exist."),
    ErrorSpec(92, "DUPLICATE_RESOURCE", False,
              "A request illegally referred to the same resource twice."),
    ErrorSpec(93, "UNACCEPTABLE_CREDENTIAL", False,
              "Requested credential would not meet criteria for acceptability."),
    ErrorSpec(100, "UNKNOWN_TOPIC_ID", True, "This server does not host a topic with that id."),
    ErrorSpec(103, "INCONSISTENT_TOPIC_ID", True,
              "The log's topic id (partition.metadata) is not the topic id in the request."),
    ErrorSpec(105, "TRANSACTIONAL_ID_NOT_FOUND", False,
              "The coordinator has no state for this transactional id."),
    ErrorSpec(110, "FENCED_MEMBER_EPOCH", False,
              "The member's epoch is not the coordinator's: rejoin with epoch 0 (KIP-848)."),
    ErrorSpec(111, "UNRELEASED_INSTANCE_ID", False,
              "Another member still holds this group instance id (KIP-848 static member)."),
    ErrorSpec(112, "UNSUPPORTED_ASSIGNOR", False,
              "The coordinator has no server assignor of that name (KIP-848)."),
    ErrorSpec(113, "STALE_MEMBER_EPOCH", False,
              "The commit's member epoch is not the member's current one (KIP-848)."),
    # share groups (KIP-932), with Kafka's retriable flags
    ErrorSpec(121, "INVALID_RECORD_STATE", False,
              "The record's state does not allow the acknowledgement (not acquired by this "
              "member, or its acquisition lock expired)."),
    ErrorSpec(122, "SHARE_SESSION_NOT_FOUND", True,
              "The share session is not found: start a new one (epoch 0)."),
    ErrorSpec(123, "INVALID_SHARE_SESSION_EPOCH", True,
              "The share session epoch is not the expected one: start a new session."),
    ErrorSpec(124, "FENCED_STATE_EPOCH", False,
              "The share state epoch is older than the share coordinator's: the state was "
              "initialized anew (an admin altered or deleted the share group's offsets)."),
    ErrorSpec(128, "INVALID_REGULAR_EXPRESSION", False,
              "The regular expression given is not valid (KIP-848, KIP-1152)."),
    ErrorSpec(133, "SHARE_SESSION_LIMIT_REACHED", True,
              "The broker's limit of share sessions has been reached."),
)
# fmt: on


class OdradekError(Exception):
    """The root of every odradek error.

    Subclasses made from ERROR_TABLE have class attributes `code`, `name`, `retriable`,
    `invalid_metadata` and `default_message`.
    """

    code: int = -1
    name: str = "UNKNOWN_SERVER_ERROR"
    retriable: bool = False
    invalid_metadata: bool = False
    default_message: str = "The server hit an unexpected error."

    def __init__(self, message: str | None = None) -> None:
        self.message = message or self.default_message
        super().__init__(self.message)

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"


class ProtocolError(OdradekError):
    """A peer broke the wire protocol: the frame or body could not be decoded."""

    code = 42
    name = "INVALID_REQUEST"
    default_message = "The peer sent bytes that break the protocol."


class UsageError(OdradekError):
    """The API or the command line was used wrongly. Raised locally, never sent."""

    code = 42
    name = "USAGE_ERROR"
    default_message = "Invalid use."


def _class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.removesuffix("_ERROR").split("_")) + "Error"


# Every row's class is declared here, one line each, so that type checkers see real classes;
# their code, flags and message come from ERROR_TABLE below (_bind). A row added without a
# class here still gets one made from the table; the assert below fails at import if a class
# here has no row.
class UnknownServerError(OdradekError): ...


class OffsetOutOfRangeError(OdradekError): ...


class CorruptMessageError(OdradekError): ...


class UnknownTopicOrPartitionError(OdradekError): ...


class LeaderNotAvailableError(OdradekError): ...


class NotLeaderForPartitionError(OdradekError): ...


class RequestTimedOutError(OdradekError): ...


class MessageTooLargeError(OdradekError): ...


class StaleControllerEpochError(OdradekError): ...


class OffsetMetadataTooLargeError(OdradekError): ...


class NetworkExceptionError(OdradekError): ...


class CoordinatorLoadInProgressError(OdradekError): ...


class CoordinatorNotAvailableError(OdradekError): ...


class NotCoordinatorError(OdradekError): ...


class InvalidTopicExceptionError(OdradekError): ...


class RecordListTooLargeError(OdradekError): ...


class NotEnoughReplicasError(OdradekError): ...


class NotEnoughReplicasAfterAppendError(OdradekError): ...


class InvalidRequiredAcksError(OdradekError): ...


class IllegalGenerationError(OdradekError): ...


class InconsistentGroupProtocolError(OdradekError): ...


class UnknownMemberIdError(OdradekError): ...


class RebalanceInProgressError(OdradekError): ...


class TopicAuthorizationFailedError(OdradekError): ...


class GroupAuthorizationFailedError(OdradekError): ...


class ClusterAuthorizationFailedError(OdradekError): ...


class SecurityDisabledError(OdradekError): ...


class OperationNotAttemptedError(OdradekError): ...


class InvalidTimestampError(OdradekError): ...


class UnsupportedVersionError(OdradekError): ...


class TopicAlreadyExistsError(OdradekError): ...


class InvalidPartitionsError(OdradekError): ...


class InvalidReplicationFactorError(OdradekError): ...


class InvalidConfigError(OdradekError): ...


class NotControllerError(OdradekError): ...


class InvalidRequestError(OdradekError): ...


class OutOfOrderSequenceNumberError(OdradekError): ...


class InvalidProducerEpochError(OdradekError): ...


class InvalidTxnStateError(OdradekError): ...


class TransactionCoordinatorFencedError(OdradekError): ...


class TransactionalIdAuthorizationFailedError(OdradekError): ...


class InvalidProducerIdMappingError(OdradekError): ...


class InvalidTransactionTimeoutError(OdradekError): ...


class ConcurrentTransactionsError(OdradekError): ...


class UnstableOffsetCommitError(OdradekError): ...


class ProducerFencedError(OdradekError): ...


class TransactionalIdNotFoundError(OdradekError): ...


class KafkaStorageError(OdradekError): ...


class LogDirNotFoundError(OdradekError): ...


class FencedLeaderEpochError(OdradekError): ...


class UnknownLeaderEpochError(OdradekError): ...


class OffsetNotAvailableError(OdradekError): ...


class GroupIdNotFoundError(OdradekError): ...


class FetchSessionIdNotFoundError(OdradekError): ...


class InvalidFetchSessionEpochError(OdradekError): ...


class NonEmptyGroupError(OdradekError): ...


class InvalidFetchSizeError(OdradekError): ...


class BrokerNotAvailableError(OdradekError): ...


class ReplicaNotAvailableError(OdradekError): ...


class InvalidGroupIdError(OdradekError): ...


class InvalidSessionTimeoutError(OdradekError): ...


class InvalidCommitOffsetSizeError(OdradekError): ...


class InvalidReplicaAssignmentError(OdradekError): ...


class ElectionNotNeededError(OdradekError): ...


class PreferredLeaderNotAvailableError(OdradekError): ...


class NoReassignmentInProgressError(OdradekError): ...


class InvalidRecordError(OdradekError): ...


class MemberIdRequiredError(OdradekError): ...


class GroupMaxSizeReachedError(OdradekError): ...


class FencedInstanceIdError(OdradekError): ...


class GroupSubscribedToTopicError(OdradekError): ...


class ListenerNotFoundError(OdradekError): ...


class ThrottlingQuotaExceededError(OdradekError): ...


class UnknownTopicIdError(OdradekError): ...


class InconsistentTopicIdError(OdradekError): ...


class FencedMemberEpochError(OdradekError): ...


class UnreleasedInstanceIdError(OdradekError): ...


class UnsupportedAssignorError(OdradekError): ...


class StaleMemberEpochError(OdradekError): ...


class InvalidRegularExpressionError(OdradekError): ...


class InvalidRecordStateError(OdradekError): ...


class ShareSessionNotFoundError(OdradekError): ...


class InvalidShareSessionEpochError(OdradekError): ...


class FencedStateEpochError(OdradekError): ...


class ShareSessionLimitReachedError(OdradekError): ...


class UnsupportedSaslMechanismError(OdradekError): ...


class IllegalSaslStateError(OdradekError): ...


class SaslAuthenticationFailedError(OdradekError): ...


class ResourceNotFoundError(OdradekError): ...


class DuplicateResourceError(OdradekError): ...


class UnacceptableCredentialError(OdradekError): ...


NetworkError = NetworkExceptionError
InvalidTopicError = InvalidTopicExceptionError

_BY_CODE: dict[int, type[OdradekError]] = {}
_BY_NAME: dict[str, type[OdradekError]] = {}


def _bind(spec: ErrorSpec) -> type[OdradekError]:
    cls: type[OdradekError] | None = globals().get(_class_name(spec.name))
    if cls is None:
        cls = type(_class_name(spec.name), (OdradekError,), {"__module__": __name__})
        globals()[cls.__name__] = cls
    cls.code = spec.code
    cls.name = spec.name
    cls.retriable = spec.retriable
    cls.invalid_metadata = spec.invalid_metadata
    cls.default_message = spec.message
    cls.__doc__ = spec.message
    return cls


for _spec in ERROR_TABLE:
    if _spec.code != 0:
        _BY_CODE[_spec.code] = _BY_NAME[_spec.name] = _bind(_spec)
_unbound = [
    c
    for c in OdradekError.__subclasses__()
    if c not in (ProtocolError, UsageError) and c not in _BY_CODE.values()
]
assert not _unbound, f"error classes with no row in ERROR_TABLE: {_unbound}"


def for_code(code: int) -> type[OdradekError]:
    """The exception class for a wire error code (UNKNOWN_SERVER_ERROR for codes we do not know)."""
    return _BY_CODE.get(code, UnknownServerError)


def for_name(name: str) -> type[OdradekError]:
    return _BY_NAME[name]


def spec_for_code(code: int) -> ErrorSpec | None:
    for spec in ERROR_TABLE:
        if spec.code == code:
            return spec
    return None


def raise_for_code(code: int, message: str | None = None) -> None:
    """Raise the error for `code`, or return when it is 0 (NONE)."""
    if code != 0:
        raise for_code(code)(message)


class LogDirOfflineError(KafkaStorageError):
    """KAFKA_STORAGE_ERROR (56) for a partition whose log directory on this broker is offline
    after an I/O error (disk full, EIO). Retriable, and the client refreshes its metadata first,
    since the controller moves leadership to another replica. A code read off the wire decodes
    as KafkaStorageError."""

    default_message = "The log directory holding this partition is offline (disk error)."
