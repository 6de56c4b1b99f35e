"""odradek's wire protocol, sans-I/O: framing, envelopes, messages, record batches, errors.

Nothing here touches a socket or an event loop; the broker and the clients feed bytes in and
take bytes (or chunks with file slices) out.
"""
