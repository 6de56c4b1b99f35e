"""`odradek schemas list|get|register|delete|compatibility|config`: the schema registry's API
(docs/schema-registry.md) from the command line.

odradek schemas list [--deleted]              one subject per line
odradek schemas get S [--version V]           the schema's text (V: a number or latest)
odradek schemas register S FILE|- [--type T]  `id N` (T: AVRO, JSON or PROTOBUF; by default
                                              from FILE's suffix: .json JSON, .proto PROTOBUF,
                                              anything else AVRO)
odradek schemas delete S [--version V] [--permanent]
                                              the versions deleted, one per line
odradek schemas compatibility S FILE|- [--version V] [--type T]
                                              `compatible`, or `incompatible` and the reasons,
                                              then exit 1
odradek schemas config [S] [--set LEVEL]      the compatibility level (the subject's, else the
                                              global one)

The registry is --registry URL[,URL...], else the local cluster's (--dir, else ./.odradek),
each URL tried in turn while one cannot be reached. With --command-config (a secure cluster's
client.properties), its SASL user logs in with HTTP Basic and its truststore checks the
registry's HTTPS certificate (docs/schema-registry.md, "Security"). A registry's error is
one line with Confluent's code (`odradek: error: SCHEMA_REGISTRY_40401: Subject 'x' not
found.`), exit 1.
`-o json` prints the registry's own JSON answer. Standard library HTTP only: no client
dependency for a handful of requests.
"""

from __future__ import annotations

import argparse
import base64
import json
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from deploy.cli_output import emit_json, output_options, print_lines, wants_json
from deploy.cluster import DEFAULT_DIR, LocalCluster
from protocol.errors import OdradekError, UsageError

TIMEOUT_S = 30.0
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class RegistryAnswerError(OdradekError):
    """The registry answered with an error: its status, Confluent's code and message."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.name = f"SCHEMA_REGISTRY_{error_code}"
        self.status, self.error_code = status, error_code


def add_parser(sub: Any, client: argparse.ArgumentParser) -> None:
    p = sub.add_parser("schemas", help="the schema registry: subjects, schemas, compatibility")
    ssub = p.add_subparsers(dest="schemas_command", metavar="ACTION", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--registry", metavar="URL[,URL...]", help="default: the local cluster's")
    parents = [client, common, output_options(argparse.SUPPRESS)]
    lst = ssub.add_parser("list", parents=parents, help="every subject")
    lst.add_argument("--deleted", action="store_true", help="soft-deleted ones too")
    lst.set_defaults(func=cmd_list)
    get = ssub.add_parser("get", parents=parents, help="a subject's schema")
    get.add_argument("subject", metavar="SUBJECT")
    get.add_argument("--version", default="latest")
    get.set_defaults(func=cmd_get)
    reg = ssub.add_parser("register", parents=parents, help="register a schema (file or -)")
    reg.add_argument("subject", metavar="SUBJECT")
    reg.add_argument("file", metavar="FILE", help="the schema's text, - for stdin")
    reg.add_argument("--type", help="AVRO, JSON or PROTOBUF (default: by FILE's suffix)")
    reg.set_defaults(func=cmd_register)
    delete = ssub.add_parser("delete", parents=parents, help="delete a subject or a version")
    delete.add_argument("subject", metavar="SUBJECT")
    delete.add_argument("--version", help="one version (default: the whole subject)")
    delete.add_argument("--permanent", action="store_true", help="for good (soft-delete first)")
    delete.set_defaults(func=cmd_delete)
    comp = ssub.add_parser("compatibility", parents=parents, help="check a schema, exit 1 if not")
    comp.add_argument("subject", metavar="SUBJECT")
    comp.add_argument("file", metavar="FILE", help="the schema's text, - for stdin")
    comp.add_argument("--version", default="latest")
    comp.add_argument("--type", help="AVRO, JSON or PROTOBUF (default: by FILE's suffix)")
    comp.set_defaults(func=cmd_compatibility)
    config = ssub.add_parser("config", parents=parents, help="show or set a compatibility level")
    config.add_argument("subject", metavar="SUBJECT", nargs="?")
    config.add_argument("--set", metavar="LEVEL", dest="level")
    config.set_defaults(func=cmd_config)


def registry_urls(args: argparse.Namespace) -> list[str]:
    """--registry, else the local cluster's (--dir, else ./.odradek)."""
    if getattr(args, "registry", None):
        return [u.strip().rstrip("/") for u in args.registry.split(",") if u.strip()]
    where = Path(getattr(args, "dir", None) or Path.cwd() / DEFAULT_DIR)
    if not (where / "cluster.json").exists():
        raise UsageError(f"no --registry and no local cluster in {where}")
    urls = LocalCluster.open(where).schema_registry_urls
    if not urls:
        raise UsageError(f"the local cluster in {where} serves no schema registry")
    return urls


def http_security(args: argparse.Namespace) -> tuple[dict[str, str], ssl.SSLContext | None]:
    """The Authorization header and the TLS context --command-config gives (none without)."""
    path = getattr(args, "command_config", None)
    if path is None:
        return {}, None
    from client.command_config import load_command_config

    config = load_command_config(Path(path))
    headers = {}
    if config.uses_sasl and config.sasl_username is not None:
        login = f"{config.sasl_username}:{config.sasl_password or ''}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(login).decode()
    return headers, config.ssl_context() if config.uses_tls else None


def call(args: argparse.Namespace, method: str, path: str, body: Any = None) -> Any:
    """The registry's JSON answer; RegistryAnswerError for an error answer, OSError when no
    URL can be reached."""
    data = None if body is None else json.dumps(body).encode()
    failure: OSError | None = None
    login, context = http_security(args)
    for url in registry_urls(args):
        req = urllib.request.Request(url + path, data=data, method=method,
                                     headers={"Content-Type": CONTENT_TYPE, **login})  # fmt: skip
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S, context=context) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            try:
                doc = json.loads(exc.read())
            except ValueError:
                doc = {}
            raise RegistryAnswerError(exc.code, int(doc.get("error_code", exc.code)),
                                      str(doc.get("message", exc.reason))) from None  # fmt: skip
        except urllib.error.URLError as exc:
            failure = OSError(f"schema registry {url}: {exc.reason}")
    assert failure is not None
    raise failure


def _subject(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


SUFFIX_TYPES = {".json": "JSON", ".proto": "PROTOBUF"}  # else AVRO (.avsc, stdin, ...)


def schema_type(args: argparse.Namespace) -> str:
    """--type, else the type FILE's suffix names (AVRO for stdin or another suffix)."""
    if args.type:
        return str(args.type).upper()
    return SUFFIX_TYPES.get(Path(args.file).suffix.lower(), "AVRO")


def _schema_text(file: str) -> str:
    return sys.stdin.read() if file == "-" else Path(file).read_text()


def _show(args: argparse.Namespace, doc: Any, lines: list[str]) -> int:
    if wants_json(args):
        emit_json(doc)
    else:
        print_lines(lines)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    subjects = call(args, "GET", "/subjects" + ("?deleted=true" if args.deleted else ""))
    return _show(args, subjects, list(subjects))


def cmd_get(args: argparse.Namespace) -> int:
    doc = call(args, "GET", f"/subjects/{_subject(args.subject)}/versions/{args.version}")
    return _show(args, doc, [doc["schema"]])


def cmd_register(args: argparse.Namespace) -> int:
    body = {"schema": _schema_text(args.file), "schemaType": schema_type(args)}
    doc = call(args, "POST", f"/subjects/{_subject(args.subject)}/versions", body)
    return _show(args, doc, [f"id {doc['id']}"])


def cmd_delete(args: argparse.Namespace) -> int:
    path = f"/subjects/{_subject(args.subject)}"
    path += f"/versions/{args.version}" if args.version else ""
    doc = call(args, "DELETE", path + ("?permanent=true" if args.permanent else ""))
    return _show(args, doc, [str(v) for v in (doc if isinstance(doc, list) else [doc])])


def cmd_compatibility(args: argparse.Namespace) -> int:
    path = f"/compatibility/subjects/{_subject(args.subject)}/versions/{args.version}"
    body = {"schema": _schema_text(args.file), "schemaType": schema_type(args)}
    doc = call(args, "POST", path + "?verbose=true", body)
    ok = bool(doc["is_compatible"])
    _show(args, doc, ["compatible"] if ok else ["incompatible", *doc.get("messages", [])])
    return 0 if ok else 1


def cmd_config(args: argparse.Namespace) -> int:
    path = "/config" + (f"/{_subject(args.subject)}" if args.subject else "")
    if args.level:
        doc = call(args, "PUT", path, {"compatibility": args.level.upper()})
        return _show(args, doc, [doc["compatibility"]])
    doc = call(args, "GET", path + ("?defaultToGlobal=true" if args.subject else ""))
    return _show(args, doc, [doc["compatibilityLevel"]])
