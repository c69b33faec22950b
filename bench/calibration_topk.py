"""modelwatch's categorical tests at two K (categories kept) on the same windows, paired.

`PYTHONPATH=. python bench/calibration_topk.py A B KINDS SIZES [PER_REF] [REFS]` — e.g.
``256 50 cat256u,cat256z 100,1000,10000``: the windows, shifts and matched-rate power of
bench/calibration_peers.py, with modelwatch at ``top_k=A`` in the place of modelwatch and
modelwatch at ``top_k=B`` in the place of a peer, so its intervals table gives power at ``A``
minus power at ``B`` with paired 95% intervals (pooled over windows and per reference).
Besides the peers bench's kinds: ``cat100z`` (100 Zipf values) and ``cat256u``/``cat256z``
(256 values), shifts every other value x (1 + c/sqrt(n)), c = 10, 15, 15.

What it decided: the default K (every value up to ``EXACT_CATEGORIES`` = 256, the top 50
beyond; `monitor.profiles.spec.kept_categories`). Results: docs/concepts/calibration.md,
"Power against peers", "A bucket for every value up to 256".
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from bench import calibration_peers as cp
from monitor.profiles import spec_from_reference

for _name, _k, _z, _c in [
    ("cat100z", 100, True, 10.0),
    ("cat256u", 256, False, 15.0),
    ("cat256z", 256, True, 15.0),
]:
    _shift = f"every other value x (1 + {_c:g}/sqrt(n))"
    cp.KINDS.setdefault(_name, cp.Kind(_name, "categorical", cp._categorical(_k, _z), _c, _shift))


def at_k(name: str, k: int) -> cp.Tool:
    """modelwatch with categorical specs of ``top_k=k``, scored under `name`."""

    def fit(reference: Any, kind: str, methods: Sequence[str], window: int) -> cp.Fitted:
        spec = spec_from_reference("x", reference, kind=kind, top_k=k)  # type: ignore[arg-type]
        return cp._Ours(spec, spec.profile(reference), methods)

    return cp.Tool(name, fit)


def main(argv: Sequence[str]) -> int:
    if len(argv) < 4:
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    a, b = int(argv[0]), int(argv[1])
    kinds, sizes = argv[2].split(","), [int(s) for s in argv[3].split(",")]
    per_ref = int(argv[4]) if len(argv) > 4 else 10
    refs = int(argv[5]) if len(argv) > 5 else None
    if bad := [k for k in kinds if k not in cp.KINDS or cp.KINDS[k].kind != "categorical"]:
        print(f"unknown categorical column kind {bad[0]!r}", file=sys.stderr)
        return 2
    peer = f"K{b}"
    cells = []
    for kind in kinds:
        shared = {
            m: {"modelwatch": by["modelwatch"], peer: by["modelwatch"]}
            for m, by in cp.SHARED["categorical"].items()
        }
        for size in sizes:
            tools = [at_k("modelwatch", a), at_k(peer, b)]
            cells.append(
                cp.run_cell(kind, size, tools, refs or cp.default_refs(size), per_ref, shared)
            )
            print(f"# {kind} {size}: {cells[-1].seconds:.1f} s", file=sys.stderr, flush=True)
    print(f"K={a} (as modelwatch) minus K={b} (as the peer)")
    print(cp.plain(cp.INTERVALS_HEADER, cp.intervals(cells, cp.FAR, per_ref)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
