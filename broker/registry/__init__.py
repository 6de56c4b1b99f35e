"""The schema registry's HTTP door: Confluent's Schema Registry REST API on its own port.

- routes.py: the endpoints, each a few lines over the registry service
  (coordinator/schema_registry/service.py): reads answer from the state this broker replayed,
  writes go through the writer, or are forwarded to it.
- server.py: the aiohttp server on the broker's loop, the forwarding client, the broker's URL
  published in ZooKeeper (so that other brokers can forward to it) and the adapter that gives
  the service the replica manager's `_schemas` partition, and its security (HTTPS, the login).
- auth.py: HTTP Basic checked against the cluster's SCRAM credentials.
- metrics.py: requests, latency and errors per endpoint, schema and subject counts.
"""
