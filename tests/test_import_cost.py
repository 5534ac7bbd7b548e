"""Import cost (issue 36 item 5): `import blockscope.kernels` loads no Triton; the public names still resolve.

Not timed (timings are machine-dependent; docs/measurements.md, "Import cost", has the numbers): each check runs in
a fresh interpreter and reads `sys.modules`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _fresh(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_kernels_loads_no_triton() -> None:
    got = _fresh(
        "import json, sys, blockscope.kernels; "
        "print(json.dumps(sorted(m for m in sys.modules if m == 'triton' or m.startswith('triton.'))))"
    )
    assert got == [], f"import blockscope.kernels imported Triton modules: {got[:10]}"


def test_profiling_results_import_loads_no_triton() -> None:
    got = _fresh("import json, sys, blockscope.profiling.results; print(json.dumps('triton' in sys.modules))")
    assert got is False


def test_public_names_resolve_lazily() -> None:
    got = _fresh(
        "import json, sys, blockscope.kernels as k; "
        "names = {n: callable(getattr(k, n)) or isinstance(getattr(k, n), (dict, tuple)) for n in k.__all__}; "
        "print(json.dumps({'missing': [n for n in k.__all__ if n not in dir(k)], 'variants': len(k.VARIANTS), "
        "'triton': 'triton' in sys.modules, 'auto': k.auto.__name__}))"
    )
    assert got["missing"] == []
    assert got["variants"] >= 12
    assert got["triton"] is True  # the variants loaded on first use
    assert got["auto"] == "blockscope.kernels.auto"


def test_from_import_and_call() -> None:
    got = _fresh(
        "import json, torch; from blockscope.kernels import softmax, masked_softmax, ragged_softmax, Softmax, "
        "get_variant; x = torch.randn(3, 40); "
        "print(json.dumps([float((softmax(x) - torch.softmax(x, -1)).abs().max()), get_variant('online').name, "
        "type(Softmax(variant='teaching')).__name__]))"
    )
    assert got[0] < 1e-6
    assert got[1:] == ["online", "Softmax"]


def test_variant_names_match_the_registry() -> None:
    from blockscope.kernels import registry

    assert registry.VARIANT_NAMES == tuple(registry.VARIANTS)


def test_ops_registered_without_triton() -> None:
    got = _fresh(
        "import json, sys, torch, blockscope.kernels; "
        "print(json.dumps([hasattr(torch.ops.blockscope, 'softmax'), 'triton' in sys.modules]))"
    )
    assert got == [True, False]


def test_torch_compile_fullgraph_in_a_fresh_process() -> None:
    """The first softmax a process makes may be traced: the variant modules load outside the trace (in the op)."""
    got = _fresh(
        "import json, torch, blockscope.kernels as k\n"
        "def f(x):\n"
        "    return k.softmax(x * 2, variant='online') + k.softmax(x, 0, 'teaching')\n"
        "c = torch.compile(f, fullgraph=True, backend='aot_eager')\n"
        "x = torch.randn(4, 100, requires_grad=True)\n"
        "y = c(x)\n"
        "y.sum().backward()\n"
        "print(json.dumps([float((y - torch.softmax(2 * x, -1) - torch.softmax(x, 0)).abs().max()), "
        "bool(torch.isfinite(x.grad).all())]))"
    )
    assert got[0] < 1e-5 and got[1]
