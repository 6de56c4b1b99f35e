"""The connection to a broker that clients and brokers share.

`transport/connection.py` is one pipelined request/response connection over the native protocol
(protocol/), with its framing, in-flight limits and timeouts. The client library (client/) uses
it to reach brokers; the broker's own connections to its peers (replica fetchers, the
controller's channel, the coordinators' peers, controlled shutdown) use the same class, so that
they authenticate (TLS, SASL: transport/security.py) exactly as any client does. It imports
only protocol/: never the client, the broker or the coordinators.
"""
