"""The native door's codecs: protocol/api/'s msgpack dataclasses to and from the operations'
models (broker/operations/), one `Codec` per API (broker/codecs/__init__.py), in one module per
family of APIs (groups.py, transactions.py, ...), as protocol/api/ groups the messages.
"""
