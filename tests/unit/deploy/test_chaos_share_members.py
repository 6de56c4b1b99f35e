"""The share workload's member processes log in as the run does: from the client properties
file the run was given (or the secure cluster's own), named to them in their environment, since
a TLS client's settings (an SSLContext) cannot be handed to another process as data."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from deploy.chaos import security
from deploy.chaos.share_member import COMMAND_CONFIG_ENV
from deploy.chaos.share_workload import MemberPool


def test_members_are_told_the_runs_client_properties_file(tmp_path: Path) -> None:
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
                     'required username="u" password="p";\n')  # fmt: skip
    pool = MemberPool("127.0.0.1:1", "g", "t", tmp_path / "members", 1, 0.0)
    try:
        security.configure(SimpleNamespace(client_properties_path=None), props)
        assert security.native()["sasl_plain_username"] == "u"
        assert pool._env()[COMMAND_CONFIG_ENV] == str(props)
        security.configure(SimpleNamespace(client_properties_path=None), None)
        assert pool._env()[COMMAND_CONFIG_ENV] == ""  # plaintext: nothing to log in with
    finally:
        security.configure(SimpleNamespace(client_properties_path=None), None)
