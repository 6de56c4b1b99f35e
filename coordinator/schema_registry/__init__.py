"""The schema registry's pure part: its `_schemas` records, its state and compatibility checks.

Confluent's Schema Registry API is served by every broker (the HTTP door, broker/registry/);
what it stores is this package's, with no I/O of its own:
- records.py: the `_schemas` topic's keys and values, Confluent's JSON, read and written.
- state.py: the registry's state, built by replaying those records in offset order (subjects,
  versions, global ids, configs, modes, soft and hard deletes), and the queries reads answer.
- writes.py: each write as a decision over the state: the records to append and the answer.
- compat.py: the levels (BACKWARD ... FULL_TRANSITIVE, NONE), dispatching to one module per
  format: avro_compat.py (the Avro specification's resolution rules, as Confluent checks
  them), json_compat.py (Confluent's JSON Schema diff and its table of compatible changes),
  protobuf_compat.py (protoc compiles; Confluent's Protobuf diff over the descriptors).
- errors.py: Confluent's error codes and HTTP statuses.
- service.py: the one object a door calls: reads from the replayed state, writes through the
  broker leading `_schemas` partition 0.
"""
