"""The native door's codecs of the transaction APIs (see broker/codecs/native/__init__.py)."""

from __future__ import annotations

from broker.codecs import Codec
from broker.operations import describe_transactions
from protocol.api import txn
from protocol.codec import Request

# ----- DescribeTransactions -------------------------------------------------------------------


def _describe_txns_in(request: Request) -> describe_transactions.DescribeTransactions:
    req: txn.DescribeTransactionsRequest = request.body
    return describe_transactions.DescribeTransactions(tuple(req.transactional_ids))


def _describe_txns_out(
    request: Request, result: describe_transactions.DescribeTransactionsResult
) -> txn.DescribeTransactionsResponse:
    return txn.DescribeTransactionsResponse([
        txn.TransactionDescription(
            s.error_code, s.transactional_id, s.state, s.timeout_ms, s.start_ms, s.producer_id,
            s.producer_epoch, [txn.TxnTopic(t, list(ps)) for t, ps in s.topics],
        )
        for s in result.transaction_states
    ])  # fmt: skip


DESCRIBE_TRANSACTIONS = Codec(_describe_txns_in, _describe_txns_out)
