"""Confluent's Schema Registry REST API over the registry service: one handler per endpoint.

Each handler reads its path, query and JSON body, asks the state (reads) or the writer
(writes, through `_writing`: this broker's service when it leads `_schemas`, else the request
is forwarded to the broker that does) and answers Confluent's JSON. Errors are Confluent's
bodies (`{"error_code": 40401, "message": ...}`, coordinator/schema_registry/errors.py), a
body that is not JSON is 400 with one line, and an unexpected failure is 500 / 50001 with one
line (the traceback goes to the broker's log only). A broker without a `_schemas` replica
forwards reads too. A request forwarded once is never forwarded again (50004 instead).

Who asks (`Login`, with `schema_registry_authentication = "http_basic"`): the user of the
request's HTTP Basic header, checked against the cluster's SCRAM credentials (auth.py; 401
otherwise, for every endpoint); without a login, User:ANONYMOUS from its peer address.
Authorization (`Authorize`, when the broker has an authorizer), once per request: that
principal needs DESCRIBE on the topic `_schemas` to read and ALTER on it to write (403 /
40301 otherwise), checked on every broker a request reaches, the forwarded one included (the
forwarding header proves nothing; the Authorization header is forwarded with the request).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from aiohttp import web

from broker.registry.metrics import RegistryMetrics
from coordinator.schema_registry import writes
from coordinator.schema_registry.compat import CHECKED, TYPES
from coordinator.schema_registry.errors import RegistryError
from coordinator.schema_registry.records import AVRO, Reference, decode, encode
from coordinator.schema_registry.service import RegistryService
from coordinator.schema_registry.state import RegistryState, StoredSchema
from protocol.principal import ANONYMOUS, KafkaPrincipal

log = logging.getLogger("odradek.schema_registry")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
FORWARDED = "X-Odradek-Forwarded"
POSITION = "X-Odradek-Registry-Offset"  # the writer's position after a write it answers
# on the writer's answer to a forwarded write: the body is {"answer": the client's answer,
# "records": [[key, value], ...] it appended}, which the forwarding broker applies at once
ENVELOPE = "X-Odradek-Registry-Records"
T = TypeVar("T")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
UNSUPPORTED_BODY = {"metadata": "data contract metadata", "ruleSet": "data contract rules"}


class Authorize(Protocol):
    def __call__(self, principal: KafkaPrincipal, peer_host: str, write: bool) -> bool:
        """May `principal` from `peer_host` read (DESCRIBE) or write (ALTER) `_schemas`?"""
        ...


class Login(Protocol):
    async def principal(self, header: str | None) -> KafkaPrincipal:
        """Who the Authorization header says asks (RegistryError 401 when it proves no one)."""
        ...


class Forwarder(Protocol):
    async def forward(self, broker_id: int, request: web.Request, body: bytes) -> web.Response:
        """The writer's answer to the same request (RegistryError 50003 when unreachable)."""
        ...


def answer(body: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, text=json.dumps(body), content_type=CONTENT_TYPE)


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").lower() == "true"


async def _json(request: web.Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.read() or b"{}")
    except ValueError:
        raise RegistryError(400, 400, "the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise RegistryError(400, 400, "the request body is not a JSON object")
    return body


def new_schema(subject: str, body: dict[str, Any]) -> writes.NewSchema:
    for name, what in UNSUPPORTED_BODY.items():
        if body.get(name) not in (None, {}, -1, 0):
            raise RegistryError.not_supported(what)
    text, schema_type = body.get("schema"), str(body.get("schemaType") or AVRO).upper()
    if not isinstance(text, str) or not text.strip():
        raise RegistryError.invalid_schema("Empty schema")
    if schema_type not in TYPES:
        raise RegistryError.invalid_schema(f"Invalid schemaType {schema_type}")
    try:
        refs = tuple(Reference(str(r["name"]), str(r["subject"]), int(r["version"]))
                     for r in body.get("references") or ())  # fmt: skip
    except (KeyError, TypeError, ValueError):
        raise RegistryError.invalid_schema("Invalid references: each needs name, subject "
                                           "and version") from None  # fmt: skip
    return writes.NewSchema(subject, schema_type, text, refs, _given(body, "id"),
                            _given(body, "version"))  # fmt: skip


def _given(body: dict[str, Any], name: str) -> int | None:
    """IMPORT mode's id or version (absent, null, 0 or -1: not given); 42201 for a non-int."""
    value = body.get(name)
    if value in (None, 0, -1):
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise RegistryError.invalid_schema(f"Invalid {name} {value!r}: an integer")
    return value


def schema_json(stored: StoredSchema, text: str | None = None) -> dict[str, Any]:
    """A schema's JSON; `text` in place of its stored text (writes.text_in_format)."""
    out: dict[str, Any] = {"schema": stored.text if text is None else text}
    if stored.schema_type != AVRO:
        out["schemaType"] = stored.schema_type
    if stored.references:
        out["references"] = [r.as_json() for r in stored.references]
    return out


def version_json(
    state: RegistryState, subject: str, number: int, fmt: str | None = None
) -> dict[str, Any]:
    schema_id = state.subjects[subject][number].id
    text = writes.text_in_format(state, schema_id, fmt)
    return {"subject": subject, "version": number, "id": schema_id,
            **schema_json(state.schemas[schema_id], text)}  # fmt: skip


def _error_code(out: web.StreamResponse) -> int:
    """Confluent's error_code of an error answer (its HTTP status when the body has none)."""
    body = out.body if isinstance(out, web.Response) else None
    try:
        code = json.loads(body if isinstance(body, bytes) else b"")["error_code"]
    except (ValueError, KeyError, TypeError):
        return out.status
    return code if isinstance(code, int) else out.status


class RegistryRoutes:
    def __init__(
        self, service: RegistryService, forwarder: Forwarder, authorize: Authorize | None = None,
        login: Login | None = None, metrics: RegistryMetrics | None = None,
        now: Callable[[], float] = time.perf_counter,
    ) -> None:  # fmt: skip
        self.service, self.forwarder, self.authorize = service, forwarder, authorize
        self.login = login
        self.metrics = metrics or RegistryMetrics()
        self._now = now
        self._writes: set[Handler] = set()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware], client_max_size=16 << 20)
        r, w = app.router, self._writes
        r.add_get("/", self.root)
        r.add_get("/subjects", self.subjects)
        r.add_get("/subjects/{subject}/versions", self.versions)
        r.add_post("/subjects/{subject}/versions", self.register)
        r.add_get("/subjects/{subject}/versions/{version}", self.get_version)
        r.add_get("/subjects/{subject}/versions/{version}/schema", self.get_version_schema)
        r.add_get("/subjects/{subject}/versions/{version}/referencedby", self.referenced_by)
        r.add_delete("/subjects/{subject}/versions/{version}", self.delete_version)
        r.add_post("/subjects/{subject}", self.lookup)
        r.add_delete("/subjects/{subject}", self.delete_subject)
        r.add_get("/schemas/types", self.types)
        r.add_get("/schemas/ids/{id}", self.schema_by_id)
        r.add_get("/schemas/ids/{id}/schema", self.schema_text_by_id)
        r.add_get("/schemas/ids/{id}/subjects", self.subjects_by_id)
        r.add_get("/schemas/ids/{id}/versions", self.versions_by_id)
        r.add_post("/compatibility/subjects/{subject}/versions/{version}", self.compatibility)
        r.add_post("/compatibility/subjects/{subject}/versions", self.compatibility_all)
        for path in ("/config", "/config/{subject}"):
            r.add_get(path, self.get_config)
            r.add_put(path, self.put_config)
            r.add_delete(path, self.delete_config)
        for path in ("/mode", "/mode/{subject}"):
            r.add_get(path, self.get_mode)
            r.add_put(path, self.put_mode)
            r.add_delete(path, self.delete_mode)
        w.update({self.register, self.delete_version, self.delete_subject, self.put_config,
                  self.delete_config, self.put_mode, self.delete_mode})  # fmt: skip
        return app

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The answer, counted in the metrics (the route's pattern is the endpoint)."""
        start = self._now()
        out = await self._answer(request, handler)
        resource = request.match_info.route.resource
        route = "unmatched" if resource is None else resource.canonical
        code = _error_code(out) if out.status >= 400 else None
        self.metrics.finished(request.method, route, self._now() - start, out.status, code)
        return out

    async def _answer(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            write = handler in self._writes
            await self._authorize(request, write)
            if not write and self._forward_reads(request):
                writer = self.service.writer_id()
                assert writer is not None
                return await self.forwarder.forward(writer, request, await request.read())
            return await handler(request)
        except RegistryError as exc:
            out = answer(exc.body(), exc.status)
            if exc.status == 401:
                out.headers["WWW-Authenticate"] = 'Basic realm="odradek schema registry"'
            return out
        except web.HTTPException as exc:  # aiohttp's own: 404 for an unknown path, 405 ...
            return answer(
                {"error_code": exc.status, "message": f"HTTP {exc.status} {exc.reason}"}, exc.status
            )
        except Exception as exc:
            log.exception("schema registry: %s %s failed", request.method, request.path)
            return answer(RegistryError.store(f"{type(exc).__name__}: {exc}").body(), 500)

    async def _authorize(self, request: web.Request, write: bool) -> None:
        """Who asks (401 when the login fails), and whether they may (403 / 40301)."""
        principal = ANONYMOUS
        if self.login is not None:
            principal = await self.login.principal(request.headers.get("Authorization"))
        if self.authorize is not None and not self.authorize(principal, request.remote or "",
                                                             write):  # fmt: skip
            what = "write to" if write else "read"
            raise RegistryError(403, 40301, f"{principal} is not allowed to {what} the schema "
                                            "registry (ALTER or DESCRIBE on the topic "
                                            "_schemas)")  # fmt: skip

    def _forward_reads(self, request: web.Request) -> bool:
        return (not self.service.hosts_replica() and FORWARDED not in request.headers
                and self.service.writer_id() is not None)  # fmt: skip

    async def _writing(
        self, request: web.Request, decide: Callable[[RegistryState], tuple[list[Any], T]],
        shape: Callable[[T], Any],
    ) -> web.Response:  # fmt: skip
        """Write through this broker's service when it is the writer, else forward."""
        body = await request.read()
        await self.service.ensure_topic()
        if self.service.is_writer():
            done, records = await self.service.write_logged(decide)
            if FORWARDED in request.headers:  # the forwarding broker applies them at once
                out = answer({"answer": shape(done), "records": [
                    [k.decode(), None if v is None else v.decode()]
                    for k, v in map(encode, records)]})  # fmt: skip
                out.headers[ENVELOPE] = "1"
            else:
                out = answer(shape(done))
            out.headers[POSITION] = str(self.service.position)
            return out
        writer = self.service.writer_id()
        if writer is None or FORWARDED in request.headers:
            raise RegistryError.unknown_leader("the _schemas writer is not known yet; retry")
        forwarded = await self.forwarder.forward(writer, request, body)
        position = forwarded.headers.get(POSITION, "")
        if forwarded.headers.get(ENVELOPE) == "1" and position.isdigit():
            envelope = json.loads(forwarded.body if isinstance(forwarded.body, bytes) else b"")
            records = [decode(k.encode(), None if v is None else v.encode())
                       for k, v in envelope["records"]]  # fmt: skip
            self.service.apply_ahead(records, int(position))  # read your writes here, now
            return answer(envelope["answer"], forwarded.status)
        if position.isdigit():  # a writer that sends no records: wait for the replay
            await self.service.wait_applied(int(position))
        return forwarded

    @property
    def state(self) -> RegistryState:
        return self.service.state

    @property
    def level(self) -> str:
        return self.service.settings.default_level

    # ----- subjects and versions ------------------------------------------------------------

    async def root(self, request: web.Request) -> web.Response:
        return answer({})

    async def subjects(self, request: web.Request) -> web.Response:
        return answer(self.state.subject_names(_flag(request, "deleted")))

    async def versions(self, request: web.Request) -> web.Response:
        subject = request.match_info["subject"]
        found = self.state.versions(subject, _flag(request, "deleted"))
        if not found:
            raise RegistryError.subject_not_found(subject)
        return answer(found)

    async def register(self, request: web.Request) -> web.Response:
        new = new_schema(request.match_info["subject"], await _json(request))
        level, normalize = self.level, _flag(request, "normalize")
        return await self._writing(request, lambda st: writes.register(st, new, level, normalize),
                                   lambda schema_id: {"id": schema_id})  # fmt: skip

    def _version(self, request: web.Request) -> tuple[str, int]:
        subject = request.match_info["subject"]
        number = writes.version_number(self.state, subject, request.match_info["version"],
                                       _flag(request, "deleted"))  # fmt: skip
        return subject, number

    async def get_version(self, request: web.Request) -> web.Response:
        subject, number = self._version(request)
        return answer(version_json(self.state, subject, number, request.query.get("format")))

    async def get_version_schema(self, request: web.Request) -> web.Response:
        subject, number = self._version(request)
        stored = self.state.schemas[self.state.subjects[subject][number].id]
        return web.Response(text=stored.text, content_type=CONTENT_TYPE)

    async def referenced_by(self, request: web.Request) -> web.Response:
        return answer(self.state.referrers(*self._version(request)))

    async def lookup(self, request: web.Request) -> web.Response:
        subject = request.match_info["subject"]
        new = new_schema(subject, await _json(request))
        _, number = writes.lookup(self.state, new, _flag(request, "deleted"),
                                  _flag(request, "normalize"))  # fmt: skip
        return answer(version_json(self.state, subject, number))

    async def delete_version(self, request: web.Request) -> web.Response:
        subject, version = request.match_info["subject"], request.match_info["version"]
        permanent = _flag(request, "permanent")
        return await self._writing(
            request, lambda st: writes.delete_version(st, subject, version, permanent),
            lambda number: number,
        )  # fmt: skip

    async def delete_subject(self, request: web.Request) -> web.Response:
        subject, permanent = request.match_info["subject"], _flag(request, "permanent")
        return await self._writing(
            request, lambda st: writes.delete_subject(st, subject, permanent), lambda vs: vs
        )

    # ----- schemas by id ----------------------------------------------------------------

    def _stored(self, request: web.Request) -> tuple[int, StoredSchema]:
        try:
            schema_id = int(request.match_info["id"])
        except ValueError:
            raise RegistryError.schema_not_found() from None
        stored = self.state.schemas.get(schema_id)
        if stored is None:
            raise RegistryError.schema_not_found()
        return schema_id, stored

    async def types(self, request: web.Request) -> web.Response:
        return answer(list(CHECKED))  # the types whose compatibility is checked (compat.py)

    async def schema_by_id(self, request: web.Request) -> web.Response:
        schema_id, stored = self._stored(request)
        text = writes.text_in_format(self.state, schema_id, request.query.get("format"))
        return answer(schema_json(stored, text))

    async def schema_text_by_id(self, request: web.Request) -> web.Response:
        return web.Response(text=self._stored(request)[1].text, content_type=CONTENT_TYPE)

    async def subjects_by_id(self, request: web.Request) -> web.Response:
        uses = self.state.uses_of(self._stored(request)[0], _flag(request, "deleted"))
        return answer(sorted({subject for subject, _ in uses}))

    async def versions_by_id(self, request: web.Request) -> web.Response:
        uses = self.state.uses_of(self._stored(request)[0], _flag(request, "deleted"))
        return answer([{"subject": s, "version": v} for s, v in uses])

    # ----- compatibility ----------------------------------------------------------------

    def _compat_answer(self, request: web.Request, problems: list[str]) -> web.Response:
        out: dict[str, Any] = {"is_compatible": not problems}
        if _flag(request, "verbose"):
            out["messages"] = problems
        return answer(out)

    async def compatibility(self, request: web.Request) -> web.Response:
        subject, version = request.match_info["subject"], request.match_info["version"]
        new = new_schema(subject, await _json(request))
        problems = writes.check_against(self.state, new, version, self.level)
        return self._compat_answer(request, problems)

    async def compatibility_all(self, request: web.Request) -> web.Response:
        new = new_schema(request.match_info["subject"], await _json(request))
        return self._compat_answer(request, writes.check_all(self.state, new, self.level))

    # ----- config and mode --------------------------------------------------------------

    async def get_config(self, request: web.Request) -> web.Response:
        subject = request.match_info.get("subject")
        if subject is not None and subject not in self.state.configs:
            if not _flag(request, "defaultToGlobal"):
                raise RegistryError.subject_config_not_found(subject)
            subject = None
        out: dict[str, Any] = {"compatibilityLevel": self.state.level(subject, self.level)}
        if subject in self.state.normalize:
            out["normalize"] = self.state.normalize[subject]
        return answer(out)

    async def put_config(self, request: web.Request) -> web.Response:
        subject, body = request.match_info.get("subject"), await _json(request)
        for name, value in body.items():
            if name not in ("compatibility", "compatibilityLevel", "normalize") and value:
                raise RegistryError.not_supported(f"the config setting {name!r}")
        level = body.get("compatibility", body.get("compatibilityLevel"))
        normalize = body.get("normalize")
        records = writes.set_config(self.state, subject, level, normalize)  # 42203 here

        def shape(_: None) -> dict[str, Any]:
            out: dict[str, Any] = {"compatibility": str(level).upper()}
            return out if normalize is None else {**out, "normalize": normalize}

        return await self._writing(request, lambda st: (records, None), shape)

    async def delete_config(self, request: web.Request) -> web.Response:
        subject = request.match_info.get("subject")
        return await self._writing(request, lambda st: writes.delete_config(st, subject),
                                   lambda level: {"compatibilityLevel": level})  # fmt: skip

    async def get_mode(self, request: web.Request) -> web.Response:
        subject = request.match_info.get("subject")
        if (
            subject is not None
            and subject not in self.state.modes
            and not _flag(request, "defaultToGlobal")
        ):
            raise RegistryError.subject_mode_not_found(subject)
        return answer({"mode": self.state.mode(subject)})

    async def put_mode(self, request: web.Request) -> web.Response:
        subject, mode = request.match_info.get("subject"), (await _json(request)).get("mode")
        records = writes.set_mode(self.state, subject, mode, _flag(request, "force"))
        return await self._writing(request, lambda st: (records, None),
                                   lambda _: {"mode": str(mode).upper()})  # fmt: skip

    async def delete_mode(self, request: web.Request) -> web.Response:
        subject = request.match_info.get("subject")
        return await self._writing(request, lambda st: writes.delete_mode(st, subject),
                                   lambda mode: {"mode": mode})  # fmt: skip
