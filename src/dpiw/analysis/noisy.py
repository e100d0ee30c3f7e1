"""A release's generator marginals measured under their noise, named for the curator at release (public
quantities only: the row count, each marginal's cells and its noise sd)."""

from __future__ import annotations

#: a generator's marginal whose typical cell (N over its cells) holds less than NOISY_SNR noise sds is mostly noise:
#: the fit, which keeps every cell at or above zero, pushes rows into its empty cells and away from the rest, and
#: `dpiw release` names it for the curator. On txhousing (7,986 rows at epsilon 1, city's 46 labels with four columns
#: in 368-cell marginals at 0.54 sds a cell) the share of prices above $150,000 was covered in 7 of 12 releases and in
#: every one of 8 with city left out; but on the simulated populations at 1,000 rows (64-cell marginals at 0.75-0.87
#: sds a cell) a warning at each estimate fired on nearly all of them and did not mark the ones covered less, so an
#: analyst's estimates are not warned (bench/README.md)
NOISY_SNR = 1.0


def noisy_marginals(measurements: dict | None, schema) -> list[tuple[float, list[str], int]]:
    """The generator's measured marginals of two or more columns whose typical cell holds less than
    :data:`NOISY_SNR` noise sds (public: the row count, the cells and the noise sd): each one's signal (N over
    its cells, over the sd; a clique measured more than once, as AIM does, at the sd of its measurements
    combined by inverse variance), its columns (a `missing: indicator` column as its numeric column) and its
    cells, noisiest first."""
    gen = (measurements or {}).get("generator") or {}
    if not gen.get("total"):
        return []
    of = {c.name: c.indicator_of for c in getattr(schema, "columns", ()) if c.indicator_of}
    names, precision, cells = gen.get("columns", []), {}, {}
    for m in gen.get("measurements", []):  # a clique measured more than once (AIM): its measurements together
        key = tuple(m["clique"])
        if len(key) > 1 and float(m["std"]) > 0:
            precision[key] = precision.get(key, 0.0) + float(m["std"]) ** -2
            cells[key] = len(m["counts"])
    out = []
    for key, prec in precision.items():
        snr = float(gen["total"]) / cells[key] * prec**0.5
        cols = list(dict.fromkeys(of.get(names[j], names[j]) for j in key))
        if len(cols) > 1 and snr < NOISY_SNR:
            out.append((snr, cols, cells[key]))
    return sorted(out)


def noisy_text(snr: float, cols: list[str], cells: int) -> str:
    """A noisy marginal in words, with what keeps it measured above its noise."""
    return (f"the release measured {' with '.join(map(repr, cols))} in a marginal of {cells:,} cells whose typical "
            f"cell holds {snr:.2g} times its noise sd: the generator's fit keeps every cell at or above zero, so it "
            "pushes rows into that marginal's empty cells, and estimates on these columns may carry a bias their "
            "intervals do not cover (fewer categories, merging rare ones, or a larger epsilon keep it above its "
            "noise)")
