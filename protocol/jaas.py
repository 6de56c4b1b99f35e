"""Kafka's `sasl.jaas.config` value: JAAS login-module entries, parsed without I/O.

    <LoginModuleClass> <flag> [key=value ...];  [<LoginModuleClass> <flag> ...;]

as Kafka's `JaasConfig` reads it (a `StreamTokenizer`): the module is a dotted class name, the
flag is required|requisite|sufficient|optional (any case), each option is `key=value` with the
value a double-quoted string (backslash escapes \\" \\\\ \\n \\t \\r) or a bare word, and every
entry ends with `;`. `//` and `/* */` comments are skipped. Examples:

    org.apache.kafka.common.security.scram.ScramLoginModule required
        username="alice" password="alice-secret";
    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice="alice-secret";

Both sides use it: a client's `--command-config` (client/command_config.py) and the broker's
PLAIN user list and inter-broker credentials. Bad input is one `UsageError` line that says
where; a password never appears in an error message (options are named, never quoted).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.errors import UsageError

FLAGS = ("required", "requisite", "sufficient", "optional")
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
MAX_JAAS_CHARS = 1 << 16  # a JAAS value is a few lines; a limit keeps a bad file from hurting
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}
_WORD_EXTRA = set("._-$*{}:/@+#")


@dataclass(frozen=True, slots=True)
class JaasEntry:
    login_module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)

    def option(self, name: str) -> str:
        """The option's value; UsageError naming it when it is missing or empty."""
        value = self.options.get(name)
        if not value:
            raise UsageError(f"sasl.jaas.config: {self.login_module} needs a {name}= option")
        return value


class _Tokens:
    """Words, quoted strings and the punctuation `=` and `;`, with comments skipped."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def _skip(self) -> None:
        text = self.text
        while self.pos < len(text):
            if text[self.pos].isspace():
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end + 1
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise UsageError("sasl.jaas.config: a /* comment is not closed")
                self.pos = end + 2
            else:
                return

    def next(self) -> tuple[str, str] | None:
        """("word"|"string"|"punct", text), or None at the end."""
        self._skip()
        if self.pos >= len(self.text):
            return None
        char = self.text[self.pos]
        if char in "=;":
            self.pos += 1
            return "punct", char
        if char == '"':
            return "string", self._quoted()
        start = self.pos
        while self.pos < len(self.text) and (
            self.text[self.pos].isalnum() or self.text[self.pos] in _WORD_EXTRA
        ):
            self.pos += 1
        if self.pos == start:
            raise UsageError(f"sasl.jaas.config: unexpected {char!r} at character {start + 1}")
        return "word", self.text[start : self.pos]

    def _quoted(self) -> str:
        out: list[str] = []
        self.pos += 1
        while self.pos < len(self.text):
            char = self.text[self.pos]
            self.pos += 1
            if char == '"':
                return "".join(out)
            if char == "\\" and self.pos < len(self.text):
                char = self.text[self.pos]
                self.pos += 1
                out.append(_ESCAPES.get(char, char))
            else:
                out.append(char)
        raise UsageError("sasl.jaas.config: a quoted value is not closed (missing '\"')")


def parse_jaas(text: str) -> list[JaasEntry]:
    """Every login-module entry of a `sasl.jaas.config` value, in order."""
    if len(text) > MAX_JAAS_CHARS:
        raise UsageError(f"sasl.jaas.config is longer than {MAX_JAAS_CHARS} characters")
    tokens = _Tokens(text)
    entries = []
    while (token := tokens.next()) is not None:
        entries.append(_entry(tokens, token))
    if not entries:
        raise UsageError("sasl.jaas.config does not contain any login modules")
    return entries


def _entry(tokens: _Tokens, first: tuple[str, str]) -> JaasEntry:
    kind, module = first
    if kind != "word":
        raise UsageError(f"sasl.jaas.config: expected a login module class, got {module!r}")
    flag_token = tokens.next()
    if flag_token is None or flag_token[0] != "word" or flag_token[1].lower() not in FLAGS:
        raise UsageError(
            f"sasl.jaas.config: {module} needs a control flag ({'|'.join(FLAGS)}) after it"
        )
    options: dict[str, str] = {}
    while True:
        token = tokens.next()
        if token is None:
            raise UsageError(f"sasl.jaas.config: the entry for {module} does not end with ';'")
        if token == ("punct", ";"):
            return JaasEntry(module, flag_token[1].lower(), options)
        if token[0] != "word":
            raise UsageError(f"sasl.jaas.config: expected an option name in {module}'s entry")
        name = token[1]
        if tokens.next() != ("punct", "="):
            raise UsageError(f"sasl.jaas.config: option {name} of {module} has no '=value'")
        value = tokens.next()
        if value is None or value[0] == "punct":
            raise UsageError(f"sasl.jaas.config: option {name} of {module} has no value")
        if name in options:
            raise UsageError(f"sasl.jaas.config: option {name} of {module} is given twice")
        options[name] = value[1]


def single_entry(text: str) -> JaasEntry:
    """A client's value: exactly one login module, as Kafka's clients require."""
    entries = parse_jaas(text)
    if len(entries) != 1:
        raise UsageError(
            f"sasl.jaas.config contains {len(entries)} login modules, should be 1 module"
        )
    return entries[0]
