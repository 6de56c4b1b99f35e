"""The native door's codecs of the metadata APIs (see broker/codecs/native/__init__.py):
Metadata. The native door names topics only by name, is told brokers at their native
endpoints, and asks for neither ids nor authorized operations; its answer is the cache's topic
list as the operation returns it (the clients' hot path: nothing is copied).
"""

from __future__ import annotations

from broker.codecs import Codec
from broker.operations import metadata
from protocol.api.metadata import NATIVE_DOOR, MetadataRequest, MetadataResponse
from protocol.codec import Request

# ----- Metadata -------------------------------------------------------------------------------


def _metadata_in(request: Request) -> metadata.Metadata:
    req: MetadataRequest = request.body
    topics = None if req.topics is None else tuple(req.topics)
    return metadata.Metadata(topics, NATIVE_DOOR, req.allow_auto_topic_creation)


def _metadata_out(request: Request, result: metadata.MetadataResult) -> MetadataResponse:
    return MetadataResponse(result.brokers, result.cluster_id, result.controller_id, result.topics)


METADATA = Codec(_metadata_in, _metadata_out)
