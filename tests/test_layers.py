"""The runner's imports run one way: no module reaches, even from inside a function, a module that reaches it back.

Built from the source (ast), so an import inside a function counts as much as one at the top; `test_imports.py`
imports each module alone, which a cycle does not break. Also: no name with a leading underscore is imported
from another package (what another package needs is public), and results/ reads a protocol only through the
registry (the seam), never a protocol's own module; likewise protocols reach the source formats only through their
registry, formats import no protocol, and the units both share (runner/units/) import neither (issue 68).
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def module_files(root: Path) -> dict[str, Path]:
    files = {}
    for path in sorted((root / "runner").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if "scaffold" in parts or "stubs" in parts:  # templates and sandbox scripts, not modules of the package
            continue
        files[".".join(parts).removesuffix(".__init__")] = path
    return files


def imports(root: Path) -> dict[str, dict[str, list[tuple[int, str]]]]:
    """module -> imported runner module -> [(line, name imported)], every import statement anywhere in the file."""
    files = module_files(root)
    graph: dict[str, dict[str, list[tuple[int, str]]]] = {m: {} for m in files}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            found: list[tuple[str, str]] = []
            if isinstance(node, ast.Import):
                found = [(a.name, "") for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([node.module] if node.module else []))
                # `from runner.env import netguard` imports the module runner.env.netguard
                found = [(f"{base}.{a.name}", a.name) if f"{base}.{a.name}" in files else (base, a.name)
                         for a in node.names]
            for target, name in found:
                if target in files and target != module:
                    graph[module].setdefault(target, []).append((node.lineno, name))
    return graph


def cycles(graph: dict[str, dict]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as a list of module names."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def describe(component: list[str], graph: dict[str, dict]) -> str:
    edges = [f"  {a} -> {b} (line {graph[a][b][0][0]})" for a in component for b in sorted(graph[a]) if b in component]
    return f"a cycle of {len(component)} modules:\n" + "\n".join(edges)


def test_no_import_cycle_among_runner_modules():
    graph = imports(REPO)
    assert len(graph) > 50 and "runner.exec.trial" in graph["runner.protocols.coding"], "the import graph was not read"
    found = cycles(graph)
    print(f"{len(found)} cycles among {len(graph)} modules")
    assert not found, "\n".join(describe(c, graph) for c in found)


def test_the_cycle_test_names_a_cycle_it_is_shown(tmp_path):
    """The check can fail: a function-level import that closes a loop of three modules is found and named."""
    package = tmp_path / "runner" / "a"
    package.mkdir(parents=True)
    (tmp_path / "runner" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "one.py").write_text("from runner.a.two import x\n")
    (package / "two.py").write_text("from runner.a import three\nx = 1\n")
    (package / "three.py").write_text("def late():\n    from runner.a.one import x\n    return x\n")
    (package / "four.py").write_text("from runner.a.one import x\n")
    graph = imports(tmp_path)
    found = cycles(graph)
    assert found == [["runner.a.one", "runner.a.three", "runner.a.two"]]
    assert "runner.a.three -> runner.a.one (line 2)" in describe(found[0], graph)


def private_crossings(graph: dict[str, dict]) -> list[str]:
    return [f"{m} imports {name} from {target} (line {line})"
            for m, targets in graph.items() for target, names in targets.items()
            for line, name in names
            if name.startswith("_") and not name.startswith("__")
            and m.split(".")[:2] != target.split(".")[:2]]


def protocol_reaches(graph: dict[str, dict]) -> list[str]:
    return [f"{m} imports {target}" for m, targets in graph.items() if m.startswith("runner.results.")
            for target in targets
            if target.startswith("runner.protocols.") and target not in ("runner.protocols.registry", "runner.protocols.base")]


def test_no_private_name_is_imported_from_another_package():
    crossing = private_crossings(imports(REPO))
    assert not crossing, "\n".join(crossing)


def test_results_read_protocols_only_through_the_registry():
    reached = protocol_reaches(imports(REPO))
    assert not reached, "\n".join(reached)


def test_the_private_name_and_registry_checks_name_what_they_are_shown(tmp_path):
    """Both checks can fail: a private name taken across packages (but not within one), and a results module
    reaching a protocol's own module (but not the registry)."""
    for folder, files in {"results": {"report.py": "from runner.protocols.coding import X\n"
                                                   "from runner.protocols.registry import R\n"
                                                   "from runner.results.plots import _p\n",
                                      "plots.py": "_p = 1\n"},
                          "protocols": {"coding.py": "from runner.results.plots import _p\nX = 1\n", "registry.py": "R = 1\n"}}.items():
        (tmp_path / "runner" / folder).mkdir(parents=True)
        (tmp_path / "runner" / folder / "__init__.py").write_text("")
        for name, text in files.items():
            (tmp_path / "runner" / folder / name).write_text(text)
    (tmp_path / "runner" / "__init__.py").write_text("")
    graph = imports(tmp_path)
    assert private_crossings(graph) == ["runner.protocols.coding imports _p from runner.results.plots (line 1)"]
    assert protocol_reaches(graph) == ["runner.results.report imports runner.protocols.coding"]


def seam_crossings(graph: dict[str, dict]) -> list[str]:
    """Every import between the source formats and the protocols, either way, and any from the units they share
    (runner/units/) into either: `pytest tests/test_layers.py -k seam -s` prints the listing."""
    def side(m: str) -> str | None:
        return next((s for s in ("sources", "protocols", "units") if m.startswith(f"runner.{s}.")), None)

    return [f"{m} imports {target} (line {names[0][0]})" for m, targets in sorted(graph.items())
            for target, names in sorted(targets.items())
            if {side(m), side(target)} == {"sources", "protocols"} or (side(m) == "units" and side(target) in ("sources", "protocols"))]


def seam_wrong(line: str) -> bool:
    """Every crossing but a protocol's import of the formats' registry."""
    return line.startswith(("runner.sources.", "runner.units.")) or " imports runner.sources.registry " not in line


def test_the_seam_protocols_reach_formats_by_their_registry_formats_import_no_protocol():
    listed = seam_crossings(imports(REPO))
    print("\n".join(["imports between runner/sources and runner/protocols:", *listed]))
    wrong = [line for line in listed if seam_wrong(line)]
    assert not wrong, "\n".join(wrong)


def test_the_seam_check_names_a_format_reaching_a_protocol(tmp_path):
    """It can fail: a format importing a protocol's module, a unit importing a format and a protocol importing a
    format's own module are named; a protocol importing the registry is listed and allowed."""
    for folder, files in {"sources": {"fmt.py": "from runner.protocols.planted.tasks import T\n"},
                          "protocols": {"planted/tasks.py": "from runner.sources import fmt, registry\nT = 1\n",
                                        "planted/__init__.py": ""},
                          "units": {"planted.py": "from runner.sources import fmt\n"}}.items():
        (tmp_path / "runner" / folder).mkdir(parents=True)
        (tmp_path / "runner" / folder / "__init__.py").write_text("")
        for name, text in files.items():
            (tmp_path / "runner" / folder / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / "runner" / folder / name).write_text(text)
    (tmp_path / "runner" / "sources" / "registry.py").write_text("")
    (tmp_path / "runner" / "__init__.py").write_text("")
    assert seam_crossings(imports(tmp_path)) == [
        "runner.protocols.planted.tasks imports runner.sources.fmt (line 1)",
        "runner.protocols.planted.tasks imports runner.sources.registry (line 1)",
        "runner.sources.fmt imports runner.protocols.planted.tasks (line 1)",
        "runner.units.planted imports runner.sources.fmt (line 1)"]
    assert [line for line in seam_crossings(imports(tmp_path)) if seam_wrong(line)] == [
        "runner.protocols.planted.tasks imports runner.sources.fmt (line 1)",
        "runner.sources.fmt imports runner.protocols.planted.tasks (line 1)",
        "runner.units.planted imports runner.sources.fmt (line 1)"]
