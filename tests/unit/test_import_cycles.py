"""No import circles between the project's modules, not even deferred ones.

Every .py file of the project's packages is parsed with `ast` (nothing is imported), and every
`import` / `from ... import` anywhere in it counts: at the top, inside a function, under
`if TYPE_CHECKING:`. Relative imports are resolved against the importing module, and
`from pkg import name` points at the module `pkg.name` when that is a module, else at `pkg`
(importing a package counts as importing its `__init__`). The parents that Python imports on
the way to a module are not edges: a package's `__init__` may import its own modules.

The strongly connected components of that graph (Tarjan's algorithm, iterative) with more than
one module, or a module importing itself, are the circles; each is reported as a chain
`a -> b -> ... -> a` with the line of every import on it. See docs/design.md, "Layering".
"""

from __future__ import annotations

import ast
import itertools
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "broker",
    "coordinator",
    "client",
    "protocol",
    "transport",
    "deploy",
    "spark_connector",
    "bench",
)

# (importing module, imported module) -> where: "path:line"
Edges = dict[tuple[str, str], str]


def _modules(root: Path) -> dict[str, Path]:
    """Module name -> file, for every .py of the packages that are packages (have __init__.py)."""
    found: dict[str, Path] = {}
    for pkg in PACKAGES:
        if not (root / pkg / "__init__.py").is_file():
            continue
        for path in sorted((root / pkg).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _imported(
    module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: set[str]
) -> Iterator[str]:
    """The project modules one import statement imports."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in known:
                yield alias.name
        return
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, node.module] if node.module else base)
    else:
        target = node.module or ""
    names_only = False
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        if sub in known:
            yield sub
        else:
            names_only = True
    if names_only and target in known:
        yield target


def import_graph(root: Path = ROOT) -> tuple[dict[str, set[str]], Edges]:
    """The module graph of the project's packages and the line of each edge's first import."""
    modules = _modules(root)
    known = set(modules)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    where: Edges = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _imported(name, path.name == "__init__.py", node, known):
                graph[name].add(target)
                where.setdefault((name, target), f"{path.relative_to(root)}:{node.lineno}")
    return graph, where


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, with an explicit stack instead of recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            nxt = next(successors, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def _chain(graph: dict[str, set[str]], component: Iterable[str]) -> list[str]:
    """A shortest circle through the component's first module, ending where it began."""
    members = set(component)
    start = min(members)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph[node] & members):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [start, *reversed(path[:-1]), start] if node != start else [start, start]
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"{start} is in a component but on no circle")


def cycles(root: Path = ROOT) -> list[str]:
    """One readable line per circle: the chain, each step with the import that makes it."""
    graph, where = import_graph(root)
    found = []
    for component in strongly_connected(graph):
        if len(component) == 1 and component[0] not in graph[component[0]]:
            continue
        chain = _chain(graph, component)
        steps = " -> ".join(f"{a} ({where[a, b]})" for a, b in itertools.pairwise(chain))
        found.append(f"{len(component)} modules: {steps} -> {chain[-1]}")
    return found


def test_no_import_cycles() -> None:
    found = cycles()
    assert not found, (
        "import circles (break each with a typing.Protocol or by moving the shared name lower):\n"
        + "\n".join(found)
    )


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_finds_deferred_typing_and_relative_circles(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "broker/__init__.py": "",
            "broker/a.py": "def f():\n    from broker import b\n",
            "broker/b.py": "import typing\nif typing.TYPE_CHECKING:\n    from .c import X\n",
            "broker/c.py": "import broker.a\n",
            "client/__init__.py": "from client.x import Y\n",
            "client/x.py": "from . import z\n",
            "client/z.py": "from client import Y\n",
            "protocol/__init__.py": "",
            "protocol/api/__init__.py": "from protocol.api import one, two\n",
            "protocol/api/one.py": "from protocol.api.two import T\n",
            "protocol/api/two.py": "T = 1\n",
        },
    )
    found = cycles(tmp_path)
    assert len(found) == 2, found
    assert found[0].startswith(
        "3 modules: broker.a (broker/a.py:2) -> broker.b (broker/b.py:3) -> broker.c"
    )
    assert found[0].endswith("-> broker.a")
    assert found[1].startswith(
        "3 modules: client (client/__init__.py:1) -> client.x (client/x.py:1) -> client.z"
    )


def test_a_package_init_may_import_its_own_modules(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "protocol/__init__.py": "",
            "protocol/api/__init__.py": "from protocol.api import one, two\nfrom .one import A\n",
            "protocol/api/one.py": "from protocol.api.two import T\nA = T\n",
            "protocol/api/two.py": "T = 1\n",
        },
    )
    graph, _ = import_graph(tmp_path)
    assert graph["protocol.api"] == {"protocol.api.one", "protocol.api.two"}
    assert graph["protocol.api.one"] == {"protocol.api.two"}
    assert cycles(tmp_path) == []
