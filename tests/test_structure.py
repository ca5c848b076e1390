"""The package's layers: commands on top, the library below; no import circle; no perfmodel import
hidden in a function except of the modules that need pycuda, NVML or matplotlib when imported."""
import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "perfmodel"
HEAVY = ("pycuda", "pynvml", "matplotlib", "torch", "triton")  # third-party modules a CPU-only install may lack or pay for at start-up


def _modules():
    out = {}
    for f in sorted(PKG.rglob("*.py")):
        rel = f.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = (f, ast.parse(f.read_text()))
    return out


MODULES = _modules()


def _target(mod: str, node, is_pkg: bool) -> list[str]:
    """Absolute perfmodel modules an import node names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("perfmodel")]
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    if node.level:
        base = base[: len(base) - (node.level - 1)]
        name = ".".join(base + ([node.module] if node.module else []))
    else:
        name = node.module or ""
    if not name.startswith("perfmodel"):
        return []
    out = []
    for a in node.names:  # `from . import x` may name a submodule
        sub = f"{name}.{a.name}"
        out.append(sub if sub in MODULES else name)
    return out


def _imports(top_level: bool):
    """{module: {imported perfmodel module: line}} for imports at module level (top_level) or inside functions."""
    edges = {}
    for mod, (f, tree) in MODULES.items():
        is_pkg = f.name == "__init__.py"
        body = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and (id(node) in body) == top_level:
                for t in _target(mod, node, is_pkg):
                    edges.setdefault(mod, {})[t] = node.lineno
    return edges


def _third_party_at_top(mod: str) -> set:
    tree = MODULES[mod][1]
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_no_import_circle():
    edges = _imports(top_level=True)
    state = {}

    def visit(m, path):
        if state.get(m) == 1:
            raise AssertionError("import circle: " + " -> ".join(path + [m]))
        if state.get(m) == 2:
            return
        state[m] = 1
        for t in edges.get(m, {}):
            if t != m and not m.startswith(t + "."):  # a package's own __init__ is not a circle
                visit(t, path + [m])
        state[m] = 2

    for m in MODULES:
        visit(m, [])


def _needs_heavy(mod: str, seen=None) -> bool:
    """Whether importing mod imports pycuda, NVML or matplotlib (itself or through its top-level imports)."""
    seen = set() if seen is None else seen
    if mod in seen or mod not in MODULES:
        return False
    seen.add(mod)
    return bool(_third_party_at_top(mod) & set(HEAVY)) or any(
        _needs_heavy(t, seen) for t in _imports(top_level=True).get(mod, {}))


def test_no_hidden_imports_except_the_heavy_ones():
    bad = []
    for mod, targets in _imports(top_level=False).items():
        for t, line in targets.items():
            if not _needs_heavy(t):
                bad.append(f"{MODULES[mod][0].relative_to(PKG.parent)}:{line} imports {t} inside a function")
    assert not bad, "\n".join(bad)


def test_the_library_never_imports_the_command_layer():
    edges = {**_imports(top_level=True)}
    for m, t in _imports(top_level=False).items():
        edges.setdefault(m, {}).update(t)
    for mod, targets in edges.items():
        if mod.startswith(("perfmodel.cli", "perfmodel.commands", "perfmodel.__main__")):
            continue
        assert not [t for t in targets if t.startswith(("perfmodel.cli", "perfmodel.commands"))], mod


def test_the_structure_checks_can_fail(tmp_path):
    """The circle finder finds a circle it is shown (a guard against a check that passes on anything)."""
    saved = dict(MODULES)
    try:
        MODULES.clear()
        for name, src in (("perfmodel.a", "from . import b\n"), ("perfmodel.b", "from .a import x\n")):
            f = tmp_path / (name.split(".")[1] + ".py")
            f.write_text(src)
            MODULES[name] = (f, ast.parse(src))
        try:
            test_no_import_circle()
        except AssertionError as exc:
            assert "perfmodel.a -> perfmodel.b -> perfmodel.a" in str(exc)
        else:
            raise AssertionError("the circle a -> b -> a was not found")
    finally:
        MODULES.clear()
        MODULES.update(saved)
