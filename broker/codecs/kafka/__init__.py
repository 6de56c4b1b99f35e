"""The Kafka door's codecs: kio's request entities to the operations' models
(broker/operations/) and their results to kio response entities, one `Codec` per API
(broker/codecs/__init__.py), in one module per family of APIs (groups.py, transactions.py, ...).
One codec serves every version the table lists, through `make` (protocol/kafka/codec.py), which
keeps only the fields the version has; version differences in wire shape stay in the codec.
"""
