"""The import rule of docs/architecture.md, read from the code: every module's imports (module level and inside
functions) against the layer table, module-level import cycles, imports of tests, and sys.path edits."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("blockscope", "kernels", "profiling", "pages")  # folders whose modules form the installed package

# layer -> the layers its modules may import (besides the standard library and third-party packages)
ALLOWED: dict[str, set[str]] = {
    "kernels": {"kernels"},
    "results": {"results", "kernels", "house"},
    "inspect": {"inspect", "results", "kernels", "house", "backends"},
    "backends": {"backends", "inspect", "results", "kernels", "house"},
    "measure": {"measure", "backends", "inspect", "results", "kernels", "house"},
    "views": {"views", "inspect", "results", "kernels", "house"},
    "cli": {"cli", "measure", "backends", "inspect", "results", "views", "kernels", "house"},
    "pages": {"pages", "views", "inspect", "results", "kernels", "house"},
    "profiling": {"cli"},
    "house": {"house", "cli", "pages", "views", "results", "kernels", "profiling"},
}
# The pages that start work on demand, and the one thing each may reach below the views for it (docs/architecture.md)
PAGE_EXCEPTIONS: set[tuple[str, str]] = {
    ("blockscope.pages.run_sweep", "blockscope.profiling.measure"),  # the Run sweep page runs a sweep
    ("blockscope.pages.run_sweep", "blockscope.profiling.measure.sweep"),
    ("blockscope.pages.run_sweep", "blockscope.profiling.measure.precompile"),
    ("blockscope.pages.run_sweep", "blockscope.profiling.measure.backends"),  # which backends run here
    ("blockscope.pages.run_sweep", "blockscope.profiling.cli"),  # the CLI's validator of N lists (n_list)
    ("blockscope.pages.backends", "blockscope.profiling.measure.backends"),  # which peers are installed here
    ("blockscope.pages.numerics", "blockscope.profiling.measure.env"),  # stamps its live (CPU) numerics rows
    ("blockscope.pages.kernel_evidence", "blockscope.profiling.measure.trace"),  # reads a run's stored traces
    ("blockscope.pages._compile", "blockscope.profiling.cli.compile"),  # the CLI's compile-time prediction
}
UI_PACKAGES = ("streamlit", "plotly")
NO_UI_LAYERS = ("kernels", "results", "inspect", "backends", "measure")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] != "blockscope":
        parts = ["blockscope", *parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str:
    parts = module.split(".")
    if parts[1:2] == ["kernels"]:
        return "kernels"
    if parts[1:2] == ["pages"]:
        return "pages"
    if parts[1:2] == ["profiling"]:
        if parts[2:4] == ["measure", "backends"]:
            return "backends"
        return parts[2] if len(parts) > 2 and parts[2] in ALLOWED else "profiling"
    return "house"


MODULES = {module_name(p): p for folder in SHIPPED for p in (ROOT / folder).rglob("*.py")}


def imports(module: str, path: Path, top_level_only: bool = False) -> list[tuple[str, int]]:
    """(imported module, line) of `path`; `from X import a` counts X.a where that is a module of ours, else X."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = (
        [n for stmt in tree.body for n in ast.walk(stmt) if not isinstance(stmt, (ast.FunctionDef, ast.ClassDef))]
        if top_level_only
        else list(ast.walk(tree))
    )
    found = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([node.module] if node.module else [])])
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
            found += [(s, node.lineno) for s in subs]
            if len(subs) < len(node.names):
                found.append((base, node.lineno))
    return found


def rule_breaks(modules: dict[str, Path]) -> list[str]:
    """'path:line: layer imports layer (module)' for every import the layer table does not allow."""
    broken = []
    for module, path in sorted(modules.items()):
        for target, line in imports(module, path):
            if not target.startswith("blockscope"):
                continue
            if layer(target) not in ALLOWED[layer(module)] and (module, target) not in PAGE_EXCEPTIONS:
                broken.append(f"{path.name}:{line}: {layer(module)} imports {layer(target)} ({target})")
    return broken


def test_every_import_follows_the_layer_rule() -> None:
    broken = rule_breaks(MODULES)
    assert not broken, "import rule broken (docs/architecture.md):\n" + "\n".join(broken)


def test_measurement_and_kernels_never_import_a_ui_package_or_tests() -> None:
    broken = []
    for module, path in sorted(MODULES.items()):
        for target, line in imports(module, path):
            top = target.split(".")[0]
            if top == "tests" or (top in UI_PACKAGES and layer(module) in NO_UI_LAYERS):
                broken.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    assert not broken, "\n".join(broken)


def test_no_module_level_import_cycle() -> None:
    graph = {
        m: {t for t, _ in imports(m, p, top_level_only=True) if t in MODULES and t != m} for m, p in MODULES.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
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
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, f"module-level import cycles: {cycles}"


def test_no_sys_path_edits_anywhere() -> None:
    offenders = []
    for folder in (*SHIPPED, "tools", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr in ("insert", "append")
                    and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "path"
                    and isinstance(node.value.value, ast.Name)
                    and node.value.value.id == "sys"
                ):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, offenders


def test_the_checker_reports_a_view_that_measures_and_a_kernel_that_reaches_up(tmp_path: Path) -> None:
    view = tmp_path / "view.py"
    view.write_text("def draw():\n    from blockscope.profiling.measure import sweep\n", encoding="utf-8")
    kernel = tmp_path / "kernel.py"
    kernel.write_text("from blockscope.profiling.results import load_results\n", encoding="utf-8")
    fine = tmp_path / "fine.py"
    fine.write_text("from blockscope.profiling.views import dashboard_data\n", encoding="utf-8")
    broken = rule_breaks(
        {
            "blockscope.profiling.views.fake": view,
            "blockscope.kernels.fake": kernel,
            "blockscope.pages.fake": fine,
        }
    )
    assert broken == [
        "kernel.py:1: kernels imports results (blockscope.profiling.results)",
        "view.py:2: views imports measure (blockscope.profiling.measure.sweep)",
    ]
