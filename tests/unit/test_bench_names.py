"""The bench scripts put their own folder first on sys.path, so a script named like a package a dependency
imports replaces that package in every process of the bench: bench/coverage.py did that to numba (whose
coverage support does ``import coverage`` and subclasses ``coverage.types.Tracer``), and every bench that fitted
marginal_match's weights died with "module 'coverage' has no attribute 'types'"."""

import importlib.util
import subprocess
import sys

import pytest

#: names that installed packages import when present (optional imports), so no bench script may take them
OPTIONAL_IMPORTS = ("coverage", "IPython", "matplotlib", "pyarrow", "scipy", "sklearn", "torch", "jax")


def _bench_names(root) -> list[str]:
    return sorted(p.stem for p in (root / "bench").glob("*.py"))


def test_no_bench_script_shadows_an_importable_or_probed_module(root):
    bench = str(root / "bench")
    path = [p for p in sys.path if p not in ("", bench)]
    clashes = []
    for name in _bench_names(root):
        if name in OPTIONAL_IMPORTS or name in sys.stdlib_module_names:
            clashes.append(name)
            continue
        saved = sys.path[:]
        try:
            sys.path[:] = path
            spec = importlib.util.find_spec(name) if name not in sys.modules else sys.modules[name].__spec__
        finally:
            sys.path[:] = saved
        if spec is not None and spec.origin and not spec.origin.startswith(bench):
            clashes.append(f"{name} ({spec.origin})")
    assert not clashes, f"bench scripts named like modules a dependency may import: {clashes}; rename them"


@pytest.mark.parametrize("module", ["numba.misc.coverage_support"])
def test_dependencies_import_with_the_bench_folder_first_on_the_path(root, module):
    """What a bench worker process does: its folder first on sys.path, then the compiled kernels' imports."""
    code = f"import sys; sys.path.insert(0, {str(root / 'bench')!r}); import {module}"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
