"""The schema registry on every broker, with confluent-kafka's own registry client and serdes.

On the shared three-broker cluster (every local cluster serves the registry): Avro, JSON
Schema and Protobuf round trips through a topic with confluent-kafka's serializers and
deserializers at their defaults (the schema registered on first use), an incompatible change
refused with 409, a compatible one given a new version, every broker answering the
same ids and versions (writes through any broker, forwarded to the writer), Confluent's
error codes, IMPORT mode (a subject's schemas registered with their ids and versions), the
registry's metrics on a broker's metrics port, and the console's schema pages and decoding of
framed records. On a cluster of its own: the `_schemas` writer killed and restarted, its
successor replaying the topic with every id kept and handing out no id twice.
"""

from __future__ import annotations

import base64
import contextlib
import json
import time
import urllib.error
import urllib.request
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.serialization import MessageField, SerializationContext

# Authlib (under the registry client) warns of its own httpx module at import, under an
# "always" filter that authlib.deprecate sets on import: ours goes in front of that one.
with warnings.catch_warnings():
    import authlib.deprecate  # noqa: F401

    warnings.simplefilter("ignore")
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.schema_registry.error import SchemaRegistryError
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from coordinator.schema_registry import protobuf_compat
from deploy.cluster import LocalCluster
from tests.fixtures.cluster import ClusterFactory, run_odradek, wait_until

pytestmark = pytest.mark.integration

SEEN_WITHIN_S = 10.0  # docs/schema-registry.md promises about a second; a loaded CI is slower


def _user(*extra: dict[str, Any], namespace: str = "t") -> str:
    """A record schema; ids are global, so a test that counts them names its own namespace."""
    fields = [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}, *extra]
    return json.dumps({"type": "record", "name": "User", "namespace": namespace,
                       "fields": fields})  # fmt: skip


def http(url: str, method: str = "GET", body: Any = None) -> tuple[int, Any]:
    """(status, JSON answer) of one request to a registry."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture
def urls(cluster3: LocalCluster) -> list[str]:
    return cluster3.schema_registry_urls


Clients = Callable[[str], SchemaRegistryClient]


@pytest.fixture
def registry() -> Iterator[Clients]:
    """confluent-kafka's registry client for a URL; each is closed after the test (its HTTP
    sessions' sockets would warn when collected)."""
    with contextlib.ExitStack() as stack:
        yield lambda url: stack.enter_context(SchemaRegistryClient({"url": url}))


@pytest.fixture
def topic() -> Iterator[str]:
    yield f"sr-{uuid.uuid4().hex[:8]}"


def test_avro_round_trip_then_incompatible_refused_and_compatible_versioned(
    cluster3: LocalCluster, urls: list[str], topic: str, registry: Clients
) -> None:
    client = registry(urls[0])
    serialize = AvroSerializer(client, _user())  # auto.register.schemas: the default
    value_ctx = SerializationContext(topic, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": cluster3.kafka_bootstrap})
    for i in range(5):
        producer.produce(topic, value=serialize({"name": f"u{i}", "age": i}, value_ctx))
    assert producer.flush(30) == 0

    # a fresh client (no cache) on another broker decodes by the id in each record
    _wait_seen(urls[1], client.get_latest_version(f"{topic}-value").schema_id)
    got = _consume(cluster3, topic, 5, AvroDeserializer(registry(urls[1])))
    assert got == [{"name": f"u{i}", "age": i} for i in range(5)]

    subject = f"{topic}-value"
    first = client.get_latest_version(subject)
    assert first.version == 1
    # BACKWARD (the default): a new field without a default cannot read the old records
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(_user({"name": "email", "type": "string"})))
    assert (refused.value.http_status_code, refused.value.error_code) == (409, 409)
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in refused.value.error_message
    status, verbose = http(f"{urls[2]}/compatibility/subjects/{subject}/versions/latest"
                           "?verbose=true", "POST",
                           {"schema": _user({"name": "email", "type": "string"})})  # fmt: skip
    assert status == 200 and verbose["is_compatible"] is False and verbose["messages"]
    # with a default it can: a new version and a new id
    compatible = Schema(_user({"name": "email", "type": "string", "default": ""}))
    assert client.test_compatibility(subject, compatible)
    new_id = client.register_schema(subject, compatible)
    assert new_id != first.schema_id
    assert client.get_versions(subject) == [1, 2]
    assert http(f"{urls[0]}/subjects/{subject}/versions/latest")[1]["id"] == new_id


def _wait_seen(url: str, schema_id: int) -> None:
    """Wait until the registry at `url` (not the broker that took the write) knows the id."""
    wait_until(lambda: http(f"{url}/schemas/ids/{schema_id}")[0] == 200,
               f"{url} to know schema id {schema_id}", SEEN_WITHIN_S)  # fmt: skip


def _consume(cluster: LocalCluster, topic: str, count: int, deserialize: Any) -> list[Any]:
    """The first `count` values of the topic, each decoded by the id it carries."""
    ctx = SerializationContext(topic, MessageField.VALUE)
    consumer = Consumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": topic,
                         "auto.offset.reset": "earliest"})  # fmt: skip
    consumer.subscribe([topic])
    got: list[Any] = []
    deadline = time.monotonic() + 60
    while len(got) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            assert msg.value()[0] == 0  # Confluent's framing: magic 0, then the 4-byte id
            got.append(deserialize(msg.value(), ctx))
    consumer.close()
    return got


def _person(**extra: Any) -> str:
    """A closed JSON Schema (no other properties): properties may be added, not removed."""
    props = {"name": {"type": "string"}, "age": {"type": "integer"}, **extra}
    return json.dumps({"type": "object", "properties": props, "required": ["name"],
                       "additionalProperties": False})  # fmt: skip


def test_json_schema_round_trip_then_incompatible_refused_and_compatible_versioned(
    cluster3: LocalCluster, urls: list[str], topic: str, registry: Clients
) -> None:
    client = registry(urls[0])
    serialize = JSONSerializer(_person(), client)  # auto.register.schemas: the default
    value_ctx = SerializationContext(topic, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": cluster3.kafka_bootstrap})
    for i in range(3):
        producer.produce(topic, value=serialize({"name": f"p{i}", "age": i}, value_ctx))
    assert producer.flush(30) == 0
    _wait_seen(urls[1], client.get_latest_version(f"{topic}-value").schema_id)
    got = _consume(cluster3, topic, 3, JSONDeserializer(None, schema_registry_client=registry(
        urls[1])))  # fmt: skip
    assert got == [{"name": f"p{i}", "age": i} for i in range(3)]

    subject = f"{topic}-value"
    first = client.get_latest_version(subject)
    assert (first.version, first.schema.schema_type) == (1, "JSON")
    # BACKWARD: a closed model cannot lose a property (old data may hold it)
    narrower = json.dumps({"type": "object", "properties": {"name": {"type": "string"}},
                           "additionalProperties": False})  # fmt: skip
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(narrower, "JSON"))
    assert (refused.value.http_status_code, refused.value.error_code) == (409, 409)
    assert "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL" in refused.value.error_message
    # it may gain an optional one: a new version
    wider = Schema(_person(email={"type": "string"}), "JSON")
    new_id = client.register_schema(subject, wider)
    assert new_id != first.schema_id and client.get_versions(subject) == [1, 2]
    assert http(f"{urls[0]}/schemas/ids/{new_id}")[1]["schemaType"] == "JSON"  # took the write
    assert "JSON" in http(f"{urls[2]}/schemas/types")[1]


PERSON_PROTO = """syntax = "proto3";
package sr;
message Person { string name = 1; int32 age = 2; }
"""


def _message_class(text: str, name: str, package: str = "sr") -> Any:
    """The protobuf class of message `name` in a .proto text: compiled by protoc (as the
    registry does), its descriptor added to a pool of its own (what a _pb2 module does)."""
    pool = descriptor_pool.DescriptorPool()
    file = descriptor_pb2.FileDescriptorProto()
    file.CopyFrom(protobuf_compat.parse(text).file)
    file.name = "person.proto"
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}"))


def test_protobuf_round_trip_then_incompatible_refused_and_compatible_versioned(
    cluster3: LocalCluster, urls: list[str], topic: str, registry: Clients
) -> None:
    person = _message_class(PERSON_PROTO, "Person")
    client = registry(urls[0])
    serialize = ProtobufSerializer(person, client)  # auto.register.schemas: the default
    value_ctx = SerializationContext(topic, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": cluster3.kafka_bootstrap})
    for i in range(3):
        producer.produce(topic, value=serialize(person(name=f"q{i}", age=i), value_ctx))
    assert producer.flush(30) == 0
    # the deserializer reads each writer schema from the registry (?format=serialized)
    _wait_seen(urls[1], client.get_latest_version(f"{topic}-value").schema_id)
    deserialize = ProtobufDeserializer(person, schema_registry_client=registry(urls[1]))
    got = _consume(cluster3, topic, 3, deserialize)
    assert [(m.name, m.age) for m in got] == [(f"q{i}", i) for i in range(3)]

    subject = f"{topic}-value"
    first = client.get_latest_version(subject)
    assert (first.version, first.schema.schema_type) == (1, "PROTOBUF")
    # BACKWARD: a field's type out of its wire group (int32 to string) is refused
    broken = PERSON_PROTO.replace("int32 age = 2", "string age = 2")
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(broken, "PROTOBUF"))
    assert (refused.value.http_status_code, refused.value.error_code) == (409, 409)
    assert "FIELD_SCALAR_KIND_CHANGED" in refused.value.error_message
    # a field added is compatible: version 2, registered as .proto text
    wider = PERSON_PROTO.replace("int32 age = 2;", "int32 age = 2; string email = 3;")
    new_id = client.register_schema(subject, Schema(wider, "PROTOBUF"))
    assert new_id != first.schema_id and client.get_versions(subject) == [1, 2]
    status, body = http(f"{urls[0]}/schemas/ids/{new_id}?format=serialized")
    assert status == 200 and body["schemaType"] == "PROTOBUF"
    fields = descriptor_pb2.FileDescriptorProto.FromString(
        base64.b64decode(body["schema"])).message_type[0].field  # fmt: skip
    assert [f.name for f in fields] == ["name", "age", "email"]
    assert http(f"{urls[0]}/schemas/ids/{new_id}")[1]["schema"] == wider


def test_protobuf_import_registered_as_a_reference_that_cannot_be_deleted(
    cluster3: LocalCluster, urls: list[str], topic: str, registry: Clients
) -> None:
    """ProtobufSerializer registers an imported file under its own subject and references it:
    ids name their references, `referencedby` lists the referrer, and the referenced version
    cannot be deleted (42206), as Confluent's."""
    address_file = f"{topic.replace('-', '_')}_address.proto"
    address = 'syntax = "proto3";\npackage sr;\nmessage Address { string city = 1; }\n'
    customer = (f'syntax = "proto3";\npackage sr;\nimport "{address_file}";\n'
                "message Customer { string name = 1; Address home = 2; }\n")  # fmt: skip
    pool = descriptor_pool.DescriptorPool()
    files = [
        (address_file, protobuf_compat.parse(address).file),
        ("customer.proto", protobuf_compat.parse(customer, [(address_file, address)]).file),
    ]
    for name, file in files:  # fmt: skip
        file.name = name
        pool.Add(file)
    customer_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("sr.Customer"))
    address_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("sr.Address"))
    serialize = ProtobufSerializer(customer_class, registry(urls[0]))
    ctx = SerializationContext(topic, MessageField.VALUE)
    value = customer_class(name="c", home=address_class(city="Prague"))
    producer = Producer({"bootstrap.servers": cluster3.kafka_bootstrap})
    producer.produce(topic, value=serialize(value, ctx))
    assert producer.flush(30) == 0
    [got] = _consume(cluster3, topic, 1, ProtobufDeserializer(
        customer_class, schema_registry_client=registry(urls[0])))  # fmt: skip
    assert got.home.city == "Prague"

    url, ref = urls[0], {"name": address_file, "subject": address_file, "version": 1}
    version = http(f"{url}/subjects/{topic}-value/versions/1")[1]
    assert version["references"] == [ref]
    assert http(f"{url}/schemas/ids/{version['id']}")[1]["references"] == [ref]
    assert http(f"{url}/subjects/{address_file}/versions/1/referencedby")[1] == [version["id"]]
    status, refused = http(f"{url}/subjects/{address_file}/versions/1", "DELETE")
    assert (status, refused["error_code"]) == (422, 42206)


def test_every_broker_sees_the_same_ids_and_versions(
    urls: list[str], topic: str, registry: Clients
) -> None:
    subject, ns = f"{topic}-value", topic.replace("-", "_")
    ids = []
    for i, url in enumerate(urls):  # each write through another broker: forwarded but one
        schema = Schema(_user(*[{"name": f"f{j}", "type": "int", "default": 0}
                                for j in range(i)], namespace=ns))  # fmt: skip
        ids.append(registry(url).register_schema(subject, schema))
        # the broker that took the write answers it at once (it waited for it, or forwarded)
        assert http(f"{url}/subjects/{subject}/versions/latest")[1]["id"] == ids[-1]
    assert len(set(ids)) == 3
    # the same schema under another subject keeps its id (ids are global)
    status, other = http(f"{urls[1]}/subjects/{topic}-other/versions", "POST",
                         {"schema": _user(namespace=ns)})  # fmt: skip
    assert (status, other) == (200, {"id": ids[0]})

    def same_everywhere() -> bool:  # the bounded time the docs promise, for every write
        answers = [http(f"{url}/subjects/{subject}/versions")[1] for url in urls]
        others = [http(f"{url}/subjects/{topic}-other/versions")[1] for url in urls]
        return all(a == [1, 2, 3] for a in answers) and all(o == [1] for o in others)

    wait_until(same_everywhere, "every broker to list the four registrations", SEEN_WITHIN_S)
    for url in urls:
        client = registry(url)
        assert [client.get_version(subject, v).schema_id for v in (1, 2, 3)] == ids
        assert http(f"{url}/schemas/ids/{ids[0]}/versions")[1] == [
            {"subject": f"{topic}-other", "version": 1},
            {"subject": subject, "version": 1},
        ]
        assert client.lookup_schema(subject, Schema(_user(namespace=ns))).version == 1
    # a subject with a slash (sent as %2F) forwarded as it came: one version, from every broker
    slashed = f"{topic}/a/b"
    got = {registry(url).register_schema(slashed, Schema('"int"')) for url in urls}
    assert len(got) == 1
    quoted = slashed.replace("/", "%2F")
    wait_until(lambda: all(http(f"{url}/subjects/{quoted}/versions")[1] == [1] for url in urls),
               "every broker to list the slashed subject's one version", SEEN_WITHIN_S)  # fmt: skip
    for url in urls:
        assert registry(url).get_versions(slashed) == [1]


def test_normalize_gives_two_spellings_one_id(
    cluster3: LocalCluster, urls: list[str], topic: str, registry: Clients
) -> None:
    """`normalize.schemas` (confluent-kafka's serializer setting, `?normalize=true`): an Avro
    schema spelled otherwise (a namespace apart, `{"type": "string"}`) gets the id of the
    first; without it, a second version. A Protobuf `.proto` text and its base64 descriptor
    are one schema with it."""
    ns = topic.replace("-", "_")
    one = _user(namespace=ns)
    other = json.dumps({"name": f"{ns}.User", "type": "record", "fields": [
        {"name": "name", "type": {"type": "string"}}, {"type": "int", "name": "age"}]})  # fmt: skip
    ctx = SerializationContext(topic, MessageField.VALUE)
    client = registry(urls[0])
    AvroSerializer(client, one, conf={"normalize.schemas": True})({"name": "a", "age": 1}, ctx)
    serialize = AvroSerializer(registry(urls[1]), other, conf={"normalize.schemas": True})
    framed = serialize({"name": "b", "age": 2}, ctx)
    first = client.get_latest_version(f"{topic}-value")
    assert framed is not None and int.from_bytes(framed[1:5], "big") == first.schema_id
    assert client.get_versions(f"{topic}-value") == [1]
    assert client.lookup_schema(f"{topic}-value", Schema(other), normalize_schemas=True
                                ).schema_id == first.schema_id  # fmt: skip
    # without normalize the other spelling is another schema (a fresh client: no cache)
    assert registry(urls[2]).register_schema(f"{topic}-value", Schema(other)) != first.schema_id
    # Protobuf: the .proto text, then its descriptor (what ProtobufSerializer sends)
    text = PERSON_PROTO.replace("package sr;", f"package {ns};")
    descriptor = base64.b64encode(protobuf_compat.parse(text).file.SerializeToString()).decode()
    ids = {client.register_schema(f"{topic}-proto", Schema(t, "PROTOBUF"),
                                  normalize_schemas=True) for t in (text, descriptor)}  # fmt: skip
    assert len(ids) == 1 and client.get_versions(f"{topic}-proto") == [1]


def test_confluent_error_codes_and_deletes(urls: list[str], topic: str) -> None:
    url, subject = urls[0], f"{topic}-value"
    assert http(f"{url}/subjects/{subject}/versions")[1]["error_code"] == 40401
    assert http(f"{url}/schemas/ids/999999")[1]["error_code"] == 40403
    bad = http(f"{url}/subjects/{subject}/versions", "POST", {"schema": '{"type": "nope"}'})
    assert bad[0] == 422 and bad[1]["error_code"] == 42201
    proto = {"schema": 'syntax = "proto3"; message M { Nope x = 1; }', "schemaType": "PROTOBUF"}
    refused = http(f"{url}/subjects/{subject}/versions", "POST", proto)
    assert refused[1]["error_code"] == 42201 and '"Nope" is not defined' in refused[1]["message"]
    assert http(f"{url}/subjects/{subject}/versions", "POST", {"schema": _user()})[0] == 200
    assert http(f"{url}/subjects/{subject}/versions/2")[1]["error_code"] == 40402
    assert http(f"{url}/subjects/{subject}/versions/zero")[1]["error_code"] == 42202
    # compatibility NONE for the subject: anything goes; the global level is unchanged
    assert http(f"{url}/config/{subject}", "PUT", {"compatibility": "NONE"}) == (
        200, {"compatibility": "NONE"})  # fmt: skip
    assert http(f"{url}/config/{subject}", "PUT", {"compatibility": "SIDEWAYS"})[1][
        "error_code"] == 42203  # fmt: skip
    assert http(f"{url}/subjects/{subject}/versions", "POST",
                {"schema": '"string"'})[0] == 200  # fmt: skip
    assert http(f"{url}/config")[1] == {"compatibilityLevel": "BACKWARD"}
    # read-only: writes refused with 42205, until the mode goes back
    assert http(f"{url}/mode/{subject}", "PUT", {"mode": "READONLY"})[0] == 200
    assert http(f"{url}/subjects/{subject}/versions", "POST",
                {"schema": '"long"'})[1]["error_code"] == 42205  # fmt: skip
    assert http(f"{url}/mode/{subject}", "DELETE")[1] == {"mode": "READONLY"}
    # deletes: a version soft then for good; the subject soft, listed with ?deleted=true
    assert http(f"{url}/subjects/{subject}/versions/1", "DELETE", None) == (200, 1)
    assert http(f"{url}/subjects/{subject}/versions/1?permanent=true", "DELETE") == (200, 1)
    assert http(f"{url}/subjects/{subject}/versions?deleted=true")[1] == [2]
    assert http(f"{url}/subjects/{subject}?permanent=true", "DELETE")[1]["error_code"] == 40405
    assert http(f"{url}/subjects/{subject}", "DELETE") == (200, [2])
    assert subject not in http(f"{url}/subjects")[1]
    assert subject in http(f"{url}/subjects?deleted=true")[1]
    assert http(f"{url}/subjects/{subject}?permanent=true", "DELETE") == (200, [2])
    assert subject not in http(f"{url}/subjects?deleted=true")[1]
    # what is not done says so
    contract = {"schema": _user(), "ruleSet": {"domainRules": [{"name": "r"}]}}
    status, body = http(f"{url}/subjects/{subject}/versions", "POST", contract)
    assert (status, body["error_code"]) == (501, 50101), body


def test_import_mode_keeps_the_given_ids_and_versions(urls: list[str], topic: str) -> None:
    """A migration's steps (Confluent's IMPORT mode), per subject: the shared cluster's global
    mode stays READWRITE for the other tests."""
    subject, ns = f"{topic}-value", topic.replace("-", "_")
    versions = f"{urls[0]}/subjects/{subject}/versions"
    # ids from another registry: far above this one's, so no other test's id meets them
    given = 2_000_000 + uuid.uuid4().int % 1_000_000
    assert http(versions, "POST", {"schema": _user(namespace=ns), "id": given})[1][
        "error_code"] == 42205  # READWRITE: the registry hands out the ids  # fmt: skip
    assert http(f"{urls[1]}/mode/{subject}", "PUT", {"mode": "IMPORT"}) == (200, {"mode": "IMPORT"})
    # version 7 with its id, then version 2 below it: no compatibility check in IMPORT
    breaking = _user({"name": "email", "type": "string"}, namespace=ns)
    assert http(versions, "POST", {"schema": breaking, "id": given + 1, "version": 7}) == (
        200, {"id": given + 1})  # fmt: skip
    assert http(versions, "POST", {"schema": _user(namespace=ns), "id": given,
                                   "version": 2}) == (200, {"id": given})  # fmt: skip
    assert http(versions, "POST", {"schema": _user(namespace=ns)})[1]["error_code"] == 42205
    taken = http(versions, "POST", {"schema": '"int"', "id": given, "version": 9})
    assert taken[0] == 422 and taken[1]["error_code"] == 42205  # another schema holds the id

    def imported_everywhere() -> bool:
        return all(http(f"{url}/subjects/{subject}/versions")[1] == [2, 7] for url in urls)

    wait_until(imported_everywhere, "every broker to list the imported versions", SEEN_WITHIN_S)
    assert http(f"{urls[2]}/subjects/{subject}/versions/7")[1]["id"] == given + 1
    assert http(f"{urls[2]}/schemas/ids/{given}")[1] == {"schema": _user(namespace=ns)}
    # a subject holding schemas goes into IMPORT only with force; READONLY refuses writes
    assert http(f"{urls[0]}/mode/{subject}", "PUT", {"mode": "READWRITE"})[0] == 200
    again = http(f"{urls[0]}/mode/{subject}", "PUT", {"mode": "IMPORT"})
    assert again[0] == 422 and "Cannot import" in again[1]["message"], again
    assert http(f"{urls[0]}/mode/{subject}?force=true", "PUT", {"mode": "IMPORT"})[0] == 200
    assert http(f"{urls[0]}/mode/{subject}", "PUT", {"mode": "READONLY"})[0] == 200
    assert http(versions, "POST", {"schema": '"int"', "id": given + 2})[1]["error_code"] == 42205
    assert http(f"{urls[0]}/mode/{subject}", "DELETE") == (200, {"mode": "READONLY"})
    # back in READWRITE, the next id is past the imported ones
    status, fresh = http(f"{urls[1]}/subjects/{topic}-after/versions", "POST",
                         {"schema": _user(namespace=ns + "_after")})  # fmt: skip
    assert status == 200 and fresh["id"] > given + 1, fresh


def test_the_registry_is_in_the_brokers_metrics(
    cluster3: LocalCluster, urls: list[str], topic: str
) -> None:
    from tests.integration.test_metrics import metrics_ports, scrape, total

    assert cluster3.state is not None
    port = metrics_ports(cluster3)[cluster3.state.brokers[0].id]  # urls[0]'s broker
    subject, endpoint = f"{topic}-value", "/subjects/{subject}/versions"
    before = scrape(port)
    assert http(f"{urls[0]}/subjects/{subject}/versions")[0] == 404
    registered = http(f"{urls[0]}/subjects/{subject}/versions", "POST",
                      {"schema": _user(namespace=topic.replace("-", "_"))})  # fmt: skip
    assert registered[0] == 200, registered
    requests, posts = (
        "odradek_schema_registry_requests_total",
        {"method": "POST", "endpoint": endpoint},
    )

    def counted() -> Any:
        """A scrape that counts the registration (the metrics port serves an answer again
        for 0.2 s, so the first one after it may be the one taken before)."""
        got = scrape(port)
        return got if total(got, requests, **posts) > total(before, requests, **posts) else None

    after = wait_until(counted, "the registration counted", SEEN_WITHIN_S)

    def grew(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    assert grew("odradek_schema_registry_request_duration_seconds_count", method="GET",
                endpoint=endpoint) >= 1  # fmt: skip
    assert grew("odradek_schema_registry_errors_total", method="GET", endpoint=endpoint,
                status="404", error_code="40401") >= 1  # fmt: skip
    assert total(after, "odradek_schema_registry_schemas") >= 1
    assert total(after, "odradek_schema_registry_subjects") >= 1


async def test_the_console_shows_subjects_and_decodes_framed_records(
    cluster3: LocalCluster, urls: list[str], topic: str
) -> None:
    """The console's schema pages and its browser over this cluster's registry (in-process:
    the page itself is tested in Chromium by test_console.py)."""
    from aiohttp.test_utils import TestClient, TestServer

    from deploy.console import server

    ns = topic.replace("-", "_")
    subject, schema = f"{topic}-value", _user(namespace=ns)
    pet = _message_class(f'syntax = "proto3";\npackage {ns};\nmessage Person {{ string name = 1; '
                         "message Pet { string kind = 1; int32 lives = 2; } }\n", "Person.Pet",
                         ns)  # fmt: skip
    with SchemaRegistryClient({"url": urls[0]}) as client:
        serialize = AvroSerializer(client, schema)
        producer = Producer({"bootstrap.servers": cluster3.kafka_bootstrap})
        ctx = SerializationContext(topic, MessageField.VALUE)
        producer.produce(topic, value=serialize({"name": "ann", "age": 7}, ctx))
        producer.produce(topic, value=b"not framed")
        pb_ctx = SerializationContext(f"{topic}-pb", MessageField.VALUE)
        producer.produce(
            f"{topic}-pb", value=ProtobufSerializer(pet, client)(pet(kind="cat", lives=9), pb_ctx)
        )
        assert producer.flush(30) == 0
        schema_id = client.get_latest_version(subject).schema_id
    assert http(f"{urls[0]}/config/{subject}", "PUT", {"compatibility": "FULL"})[0] == 200
    console = server.Console(cluster3.bootstrap, None, registry_urls=urls)
    page = TestClient(TestServer(server.make_app(console)))
    await page.start_server()
    try:
        listed = await (await page.get("/api/schemas")).json()
        assert {"name": subject, "versions": [1], "level": "FULL"} in listed["subjects"], listed
        assert listed["level"] == "BACKWARD"
        shown = await (await page.get(f"/api/schemas/{subject}")).json()
        assert shown["level"] == "FULL" and len(shown["versions"]) == 1
        assert shown["versions"][0] | {"schema": json.loads(shown["versions"][0]["schema"])} == {
            "version": 1, "id": schema_id, "schemaType": "AVRO", "references": [],
            "schema": json.loads(schema)}  # fmt: skip
        missing = await page.get("/api/schemas/no-such-subject")
        assert missing.status == 404 and "not found" in (await missing.json())["error"]
        browsed = await page.post("/api/browse", json={"topic": topic},
                                  headers={server.CONTROL_HEADER: "1"})  # fmt: skip
        records = (await browsed.json())["records"]
        assert [r["value"]["kind"] for r in records] == ["avro", "text"], records
        assert records[0]["value"]["schema_id"] == schema_id
        assert json.loads(records[0]["value"]["text"]) == {"name": "ann", "age": 7}
        # Protobuf, written by confluent-kafka's ProtobufSerializer: a nested message, so
        # the value carries message indexes [0, 0] before the message
        browsed = await page.post("/api/browse", json={"topic": f"{topic}-pb"},
                                  headers={server.CONTROL_HEADER: "1"})  # fmt: skip
        [pet] = [r["value"] for r in (await browsed.json())["records"]]
        assert (pet["kind"], pet["message"]) == ("protobuf", f"{ns}.Person.Pet"), pet
        assert json.loads(pet["text"]) == {"kind": "cat", "lives": 9}
    finally:
        await page.close()


def test_the_cli(cluster3: LocalCluster, topic: str, tmp_path: Path) -> None:
    """`odradek schemas ...` against a broker (--registry) and the local cluster (--dir)."""
    subject, ns = f"{topic}-value", topic.replace("-", "_")
    where = ["--registry", cluster3.schema_registry_urls[1]]

    def odradek(*args: str, stdin: str | None = None, ok: bool = True) -> str:
        """stdout, or (not `ok`: exit 1 expected) stdout and stderr."""
        done = run_odradek("schemas", *args, *where, input=stdin)
        assert done.returncode == (0 if ok else 1), done.stderr
        assert "Traceback" not in done.stderr
        return done.stdout if ok else done.stdout + done.stderr

    first = odradek("register", subject, "-", stdin=_user(namespace=ns))
    assert first.startswith("id ")
    person = tmp_path / "person.proto"  # the type from the suffix: PROTOBUF
    person.write_text(PERSON_PROTO.replace("package sr", f"package {ns}"))
    assert odradek("register", f"{topic}-proto", str(person)).startswith("id ")
    assert http(f"{where[1]}/subjects/{topic}-proto/versions/1")[1]["schemaType"] == "PROTOBUF"
    assert subject in odradek("list").splitlines()
    assert json.loads(odradek("get", subject))["namespace"] == ns
    breaking = tmp_path / "breaking.avsc"
    breaking.write_text(_user({"name": "email", "type": "string"}, namespace=ns))
    verdict = odradek("compatibility", subject, str(breaking), ok=False).splitlines()
    assert verdict[0] == "incompatible" and "READER_FIELD_MISSING_DEFAULT_VALUE" in verdict[1]
    assert odradek("config", subject, "--set", "none").strip() == "NONE"
    assert odradek("compatibility", subject, str(breaking)).strip() == "compatible"
    assert odradek("delete", subject).split() == ["1"]
    missing = odradek("get", subject, ok=False)  # only a soft-deleted version left
    assert missing.startswith("odradek: error: SCHEMA_REGISTRY_40402: "), missing
    where = ["--dir", str(cluster3.dir)]  # the local cluster's registry
    assert json.loads(odradek("config", "-o", "json")) == {"compatibilityLevel": "BACKWARD"}


@pytest.mark.slow  # it kills a broker (a cluster of its own)
def test_writer_killed_successor_replays_with_ids_kept(
    cluster_factory: ClusterFactory, registry: Clients
) -> None:
    cluster = cluster_factory(3)
    urls = {b.id: f"http://127.0.0.1:{b.registry_port}" for b in cluster.state.brokers}
    ids = [registry(urls[1]).register_schema(
        f"s{i}", Schema(_user({"name": f"x{i}", "type": "int", "default": i})))
        for i in range(3)]  # fmt: skip
    writer = _writer(cluster)
    cluster.kill(writer)
    survivor = next(i for i in urls if i != writer)

    def registered_after_failover() -> int | None:
        status, body = http(f"{urls[survivor]}/subjects/after/versions", "POST",
                            {"schema": '"string"'})  # fmt: skip
        return body["id"] if status == 200 else None  # 50004 / 50003 while none leads

    new_id = wait_until(registered_after_failover, "a registration after failover", 60)
    assert new_id == max(ids) + 1  # the successor replayed to the end before handing one out
    cluster.start(writer)
    for broker_id, url in urls.items():
        client = registry(url)
        wait_until(lambda u=url: http(f"{u}/subjects/after/versions")[0] == 200,
                   f"broker {broker_id} to replay the topic", 60)  # fmt: skip
        assert [client.get_latest_version(f"s{i}").schema_id for i in range(3)] == ids


def _writer(cluster: LocalCluster) -> int:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
    topics = admin.list_topics("_schemas", timeout=30).topics
    return int(topics["_schemas"].partitions[0].leader)
