"""bench_baseline's worktree of a ref runs that ref's code, C record codec included.

A worktree is a bare checkout: without the compiled modules its pyproject.toml lists, a ref from
after the C encoder fails to import (`make bench --baseline` of such a ref did, before
`build_extensions`). This checks out HEAD, imports the codec from that tree alone and encodes.
`two_sides` (what the A/B benchmarks run on) starts a cluster from each tree, and stops both.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_baseline import two_sides, worktree

PROBE = (
    "import protocol._encoder, protocol._records, protocol.batch as b; "
    "assert protocol._encoder.__file__.startswith(r'{src}'), protocol._encoder.__file__; "
    "print([r.value for r in b.decode_all(b.build_batch_from_values([b'a', b'bc'], 0))])"
)


def test_a_worktree_of_head_imports_its_own_compiled_codec() -> None:
    with worktree("HEAD") as (src, _commit):
        built = sorted(p.name.split(".")[0] for p in (src / "protocol").glob("_*.so"))
        assert built == ["_encoder", "_records"]
        out = subprocess.run(
            [sys.executable, "-c", PROBE.format(src=src)],
            cwd=src, env={"PYTHONPATH": str(src)}, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "[b'a', b'bc']"
    assert not src.exists()  # removed at the end


def test_two_sides_run_a_cluster_from_each_tree_and_stop_both() -> None:
    with two_sides("HEAD", old="old", brokers=1) as (sides, commit):
        assert [side.name for side in sides] == ["old", "new"] and commit
        old_tree, pids = sides[0].root, []
        for side in sides:
            listed = side.cli("topics", "list", "--bootstrap", side.bootstrap)
            assert listed.returncode == 0, listed.stderr
            state = json.loads((side.dir / "cluster.json").read_text())
            pids += [broker["pid"] for broker in state["brokers"]]
        assert sides[0].root != sides[1].root and len(pids) == 2
    assert not old_tree.exists()
    for pid in pids:  # stopped (a zombie of ours would still show in /proc: they were reaped)
        assert not Path(f"/proc/{pid}").exists(), pid
