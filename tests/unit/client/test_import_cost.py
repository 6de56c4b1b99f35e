"""What `import client` loads: not Kafka's codec. kio's schema modules (and Hypothesis, which
kio imports when it is installed) cost a client about 0.4 s of CPU at start-up; only the
Kafka-port probe needs them, and it imports them when it runs (transport/kafka_probe.py)."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_client_does_not_load_kafkas_codec() -> None:
    code = "import sys, client; print(sorted(m for m in ('kio', 'hypothesis') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
