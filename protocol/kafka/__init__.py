"""Kafka's wire protocol, sans-I/O: the second front door's codec.

Frames are Kafka's (a 4-byte big-endian size, then the body: protocol/framing.py decodes both
doors' frames). A request body is a request header (v1, or v2 with tagged fields when the API
version is flexible) followed by the request; a response is a response header (v0, or v1 when
flexible; ApiVersions always v0) followed by the response. Message bodies are decoded and
encoded by kio, generated from Kafka's own JSON message schemas (kio's readers are compiled);
this package adds only what kio does not do: which versions odradek serves (`versions.py`),
headers and dispatch (`codec.py`), and the Fetch response with records sent from the segment
files (`fetch_response.py`).
"""
