"""A bundle's one-page datasheet (``datasheet.html``): what a curator hands to analysts with the release.

It is drawn from the bundle's own files only - the released rows and weights, the manifest, the public schema
and the noisy measurements - all DP outputs or public, never the private rows: writing it is post-processing
and costs no privacy. It says the guarantee and the neighbouring relation; shows each column's released
distribution, unweighted and weighted, beside the noisy marginal the generator measured; gives the weights'
ESS and Pareto k-hat; says what estimates from the release can and cannot be trusted for; and gives the lines
of Python and R that read it.
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np

DATASHEET = "datasheet.html"

STYLE = """<style>
body { font-family: system-ui, sans-serif; margin: 1.2em 1.5em; color: #222; max-width: 78em; }
h1 { font-size: 1.4em; margin: 0 0 0.3em 0; } h2 { font-size: 1.1em; margin: 1em 0 0.4em 0; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.15em 1em; }
.facts dt { font-weight: 600; } .facts dd { margin: 0; }
.cols { display: grid; grid-template-columns: repeat(auto-fill, minmax(21em, 1fr)); gap: 0.8em; }
.col { border: 1px solid #ddd; border-radius: 4px; padding: 0.4em 0.6em; font-size: 0.8em; }
.col h3 { font-size: 1.05em; margin: 0 0 0.3em 0; }
.col table { border-collapse: collapse; width: 100%; }
.col td { padding: 0 0.3em; white-space: nowrap; } .col td.bars { width: 55%; }
.bar { height: 0.42em; margin: 1px 0; } .m { background: #888; } .u { background: #7aa6d6; } .w { background: #1f5fa8; }
.key span { display: inline-block; width: 0.9em; height: 0.6em; margin: 0 0.2em 0 0.8em; }
code, pre { background: #f4f4f4; } pre { padding: 0.5em; font-size: 0.85em; }
ul { margin: 0.2em 0; }
.warn { color: #9a4d00; }
</style>"""

#: a categorical column with more categories than this shows its largest ones only
MAX_ROWS = 12


def _share(mask: np.ndarray, w: np.ndarray) -> float:
    return float(w[mask].sum() / w.sum()) if w.sum() > 0 else float("nan")


def _measured(bundle, name: str) -> np.ndarray | None:
    """The generator's noisy one-way counts of a column over its bins (None where none was published); a `missing:
    indicator` column's over the rows with a value, from its two-way count with its 0/1 column where there is one
    (MST measures that pair always), so they compare with the released rows' shares."""
    g = (bundle.measurements or {}).get("generator") or {}
    if name not in g.get("columns", []):
        return None
    j = g["columns"].index(name)
    pair = _flag_pair(bundle, name)
    if pair is not None:
        a, b = pair["clique"]
        counts = np.asarray(pair["counts"], float).reshape(g["cards"][a], g["cards"][b])
        return np.clip(counts[:, 0] if a == j else counts[0, :], 0, None)  # the flag's "0": a value there
    for m in g.get("measurements", []):
        if list(m["clique"]) == [j]:
            return np.clip(np.asarray(m["counts"], float), 0, None)
    return None


def _with_value(bundle, name: str) -> float | None:
    """A `missing: indicator` column's measured count of rows with a value: the total less its flag's one-way count
    of 1 (one noisy cell, where the sum of the pair's clipped cells adds every cell's noise and runs high), or
    None where either is not published."""
    g = (bundle.measurements or {}).get("generator") or {}
    flag = _flag_of(bundle, name)
    if flag is None or flag not in g.get("columns", []) or "total" not in g or _flag_pair(bundle, name) is None:
        return None
    j = g["columns"].index(flag)
    one = next((m for m in g.get("measurements", []) if list(m["clique"]) == [j]), None)
    return None if one is None else float(g["total"]) - float(one["counts"][1])


def _flag_of(bundle, name: str) -> str | None:
    return next((c.name for c in getattr(bundle.schema, "columns", ()) if c.indicator_of == name), None)


def _flag_pair(bundle, name: str) -> dict | None:
    """The generator's published two-way count of a `missing: indicator` column with its 0/1 column, or None."""
    g = (bundle.measurements or {}).get("generator") or {}
    cols = g.get("columns", [])
    flag = _flag_of(bundle, name)
    if name not in cols or flag not in cols or "cards" not in g:
        return None
    want = sorted([cols.index(name), cols.index(flag)])
    return next((m for m in g.get("measurements", []) if sorted(m["clique"]) == want), None)


def _bins(bundle, col):
    """A numeric column's released bins (:class:`dpiw.sdgp.binning.NumericBins`): the bins of least spread cut
    from its fine histogram where the generator measured one, else equal-width bins."""
    from dpiw.analysis.bin_bias import binning_of
    from dpiw.sdgp.binning import Binning

    binning = binning_of(bundle.schema, bundle.measurements)
    if binning is None:
        g = (bundle.measurements or {}).get("generator") or {}
        binning = Binning.equal_width(bundle.schema, int(g.get("bins", 8)))
    return binning.numeric[col.name]


def _bin_labels(nb, col) -> list[str]:
    """Each bin in the column's units: its range, or the whole numbers it holds (one per fine cell, or runs of
    them, on an integer grid)."""
    width = col.upper - col.lower
    below, above = nb.grid.edges()
    if col.integer:
        edges = col.from_unit(np.asarray(nb.cuts, float) / nb.grid.cells)
        edges[-1] = col.upper
        if nb.grid.span is not None:  # the grid's whole numbers
            lowest, highest = nb.ends()
            ints = [(int(round(col.lower + a * width)), int(round(col.lower + b * width)))
                    for a, b in zip(lowest, highest, strict=True)]
        elif col.scale == "log":  # cells on log(1 + x): the whole numbers whose scaled value is in the bin
            lo, hi = (col.from_unit(e) for e in (below[nb.cuts[:-1]], above[nb.cuts[1:] - 1]))
            spike = lo == hi  # a spike's bin: its bound alone; the bin after a lower spike is open at it
            after = nb.grid.low & (np.asarray(nb.cuts[:-1]) == nb.grid.offset)
            first = [int(round(a)) if s else int(np.floor(a)) + 1 if f else int(np.ceil(a - 1e-9))
                     for a, s, f in zip(lo, spike, after, strict=True)]
            last = [int(round(b)) if s else int(np.ceil(b - 1e-9)) - 1 for b, s in zip(hi, spike, strict=True)]
            if not spike[-1]:
                last[-1] = int(np.floor(col.upper))
            ints = list(zip(first, last, strict=True))
        else:  # equal-width bins: the whole numbers a bin holds (the last bin holds its upper edge)
            ints = [(int(np.ceil(edges[k])), int(np.ceil(edges[k + 1])) - (k < len(edges) - 2))
                    for k in range(len(edges) - 1)]
        return [f"{a:,}" if a == b else f"{a:,} to {b:,}" if a < b else "(no whole number)" for a, b in ints]
    lows, highs = (col.from_unit(e) for e in (below[nb.cuts[:-1]], above[nb.cuts[1:] - 1]))
    past = nb.grid.low & (np.asarray(nb.cuts[:-1]) == nb.grid.offset)  # the bin after a lower spike: open at it
    if col.scale == "log":  # cells of every size: three significant digits
        def edge(x: float) -> str:
            text = f"{float(f'{x:.3g}'):,.{max(0, 2 - int(np.floor(np.log10(abs(x)))))}f}" if x else "0"
            return text.rstrip("0").rstrip(".") if "." in text else text
    else:
        step = width / nb.grid.middle  # a fine cell, to two significant digits: 196 for bounds 0 to 50,000
        decimals = max(0, 1 - int(np.floor(np.log10(step))))

        def edge(x: float) -> str:
            text = f"{x:,.{decimals}f}"
            return text.rstrip("0").rstrip(".") if "." in text else text  # 0, not 0.0; 247.1

    return [edge(a) if a == b else f"{'above ' if after else ''}{edge(a)} to {edge(b)}"
            for a, b, after in zip(lows, highs, past, strict=True)]  # a spike: its bound alone


def _rows(bundle, col) -> tuple[list[str], list[float | None], list[float], list[float]]:
    """Per bin or category: its label, the measured share, the released share unweighted and weighted."""
    d, w = bundle.data, bundle.weights
    one = np.ones(len(w))
    counts = _measured(bundle, col.name)
    if col.is_numeric:
        x = d[col.name].to_numpy(float)
        present = ~np.isnan(x)
        nb = _bins(bundle, col)
        labels = _bin_labels(nb, col)
        idx = np.full(len(x), -1)
        idx[present] = nb.cells(col.to_unit(x[present]))  # as the generator binned them
        unw = [_share(present & (idx == k), one) / max(_share(present, one), 1e-12) for k in range(len(labels))]
        wtd = [_share(present & (idx == k), w) / max(_share(present, w), 1e-12) for k in range(len(labels))]
    else:
        labels = [str(v) for v in col.labels]
        values = d[col.name]
        unw = [_share((values == v).to_numpy(), one) for v in col.labels]
        wtd = [_share((values == v).to_numpy(), w) for v in col.labels]
    whole = (_with_value(bundle, col.name) or counts.sum()) if counts is not None else 0.0
    meas = list(counts / whole) if counts is not None and whole > 0 and len(counts) == len(labels) \
        else [None] * len(labels)
    if len(labels) > MAX_ROWS:  # the largest by the released weighted share
        keep = sorted(np.argsort(wtd)[::-1][:MAX_ROWS])
        labels, meas, unw, wtd = ([v[k] for k in keep] for v in (labels, meas, unw, wtd))
    return labels, meas, unw, wtd


def _card(bundle, col, crowded: list, piled: dict | None = None) -> str:
    """One column's card; ``crowded``: :func:`dpiw.analysis.bin_bias.crowded` of the bundle; ``piled``: each
    column's :func:`dpiw.analysis.bin_bias.piles`, in words."""
    labels, meas, unw, wtd = _rows(bundle, col)
    top = max([v for v in (*meas, *unw, *wtd) if v is not None] + [1e-12])
    body = []
    for label, m, u, w in zip(labels, meas, unw, wtd, strict=True):
        bars = "".join(f"<div class=\"bar {k}\" style=\"width:{100 * v / top:.1f}%\" title=\"{v:.3f}\"></div>"
                       for k, v in (("m", m), ("u", u), ("w", w)) if v is not None)
        body.append(f"<tr><td>{html.escape(label)}</td><td class=\"bars\">{bars}</td>"
                    f"<td>{'–' if m is None else f'{m:.3f}'}</td><td>{w:.3f}</td></tr>")
    extra = ""
    if col.is_numeric:
        x = bundle.data[col.name].to_numpy(float)
        present = ~np.isnan(x)
        from dpiw.analysis.bin_bias import crowded_text, value_text

        mean_u = float(x[present].mean()) if present.any() else float("nan")
        mean_w = float(np.average(x[present], weights=bundle.weights[present])) if present.any() else float("nan")
        extra = (f"<div>mean {value_text(mean_u)} unweighted, {value_text(mean_w)} weighted"
                 + (f"; empty in {1 - present.mean():.1%} of the synthetic rows" if not present.all() else "")
                 + "</div>")
        extra += "".join(f"<div class=\"warn\"><small>{html.escape(crowded_text(*found, column=col))}</small></div>"
                         for found in crowded if found[0] == col.name)
        extra += "".join(f"<div class=\"warn\"><small>{html.escape(text)}</small></div>"
                         for text in (piled or {}).get(col.name, []))
        if col.missing:
            extra += ("<div><small>the rows with a value, measured (the generator's count beside the empty flag) "
                      "and released</small></div>" if _flag_pair(bundle, col.name) is not None else
                      "<div><small>measured: with the empty rows, which the model holds at the lower bound; "
                      "released: the rows with a value</small></div>")
    if not col.is_numeric and len(col.labels) > len(labels):  # the table shows the MAX_ROWS largest
        rest = [v for v in col.labels if str(v) not in labels]
        most = max(_share((bundle.data[col.name] == v).to_numpy(), bundle.weights) for v in rest)
        held = ("no released rows" if most == 0 else "under 0.001 of the rows weighted each" if most < 0.0005
                else f"at most {most:.3f} of the rows weighted each")
        extra += (f"<div><small>{len(rest)} more categories, not shown, with {held}: "
                  f"{html.escape(', '.join(map(str, rest)))}</small></div>")
    kind = "numeric" + (", whole numbers" if col.integer else "") if col.is_numeric else "categorical"
    return (f"<div class=\"col\"><h3>{html.escape(col.name)} <small>({kind})</small></h3>{extra}<table>"
            "<tr><th></th><th></th><th>measured</th><th>weighted</th></tr>" + "".join(body) + "</table></div>")


#: a measured cell below this many noise sds: the generator's measurements are mostly noise
SIGNAL_MIN = 3.0


def signal(bundle) -> float | None:
    """The median over the generator's one-way measurements of a cell's expected count over its noise sd
    (the published counts' total and std: DP outputs), or None where none was published."""
    g = (bundle.measurements or {}).get("generator") or {}
    ratios = [float(g.get("total", 0)) / len(m["counts"]) / m["std"] for m in g.get("measurements", [])
              if len(m["clique"]) == 1 and m.get("std")]
    return float(np.median(ratios)) if ratios else None


def _trust(bundle, crowded: list) -> list[str]:
    from dpiw.commands.export import weight_column

    m, rel = bundle.manifest, bundle.manifest.get("release", {})
    unit = bool(rel.get("weights", {}).get("unit")) or np.allclose(bundle.weights, 1.0)
    k, limit = rel.get("pareto_k"), rel.get("pareto_k_threshold")
    snr = signal(bundle)
    weak = snr is not None and snr < SIGNAL_MIN
    can = ["Shares of a category and rates of the target, overall and in subgroups the generator's measured "
           "marginals reach, with the noise-aware intervals of <code>dpiw.analysis</code>."]
    lost = [found[0] for found in crowded]
    if not weak:
        can.append("A numeric column's mean, and its mean in a subgroup of columns the generator measured with it "
                   "(<i>Which columns were measured together</i>: a pair the weights alone measured can be off by "
                   "more than its interval): values are drawn from a fine DP histogram of the column, so a skewed "
                   "column keeps its shape"
                   + (f" (not {', '.join(map(html.escape, lost))}: most of its rows share one fine cell, see its card)"
                      if lost else "") + ".")
    cannot = [*([f"<b>Much at all, at this size and ε</b>: a typical cell the generator measured holds about "
                 f"{snr:.2g} times its noise sd (below {SIGNAL_MIN:g}, its measurements are mostly noise): every "
                 "estimate, numeric means included, can be far from the table's and outside its interval. Treat "
                 "the release as a sketch of the table's shape, not as numbers."] if weak else []),
              "Relations the generator did not measure (it models pairs of columns along a tree, or the "
              "cliques it selected): a three-way interaction can be flattened; the intervals cover the DP noise "
              "and the sampling, NOT that bias.",
              "Anything about one person: the rows are synthetic, and the guarantee bounds what any row could "
              "reveal.",
              "Rare categories and small subgroups: their counts are mostly noise.",
              "The mean of a heavy-tailed column (spending, income): its largest values are few rows of a fine "
              "histogram's noisy tail, which the release drops or moves, so its mean can be off by more than its "
              "interval says; its median and shares above a value hold better (<code>b.quantile</code>, "
              "<code>b.share</code>)."]
    if unit:
        can.append("The weights are all 1 (no weights were spent on, or their signal did not pass its noise): "
                   "the rows are used as they are.")
    else:
        cannot.append("Estimates without the weights: use the "
                      f"<code>{html.escape(weight_column(bundle.data.columns))}</code> column in every estimate.")
        if k is not None and limit is not None and k > limit:
            cannot.append(f"Any weighted estimate: the weights' Pareto k-hat {k:.2f} is above {limit:.2f}.")
    if not m.get("dp"):
        cannot.insert(0, "Privacy: this run is NOT differentially private.")
    return can, cannot


def _measured_together(b) -> list[str]:
    """What the release's noisy marginals hold together: the target's partners and the rest, each pair once."""
    target = b.schema.target
    split = b.measured_with(target)
    if split is None:
        return []
    with_target, without = split

    def code(ns):
        return ", ".join(f"<code>{html.escape(n)}</code>" for n in ns) or "none"

    # a generator that publishes no marginals (PrivBayes, a GAN): nothing to tell the weights' pairs from
    own = b.generator_pairs if "generator" in b.measurements else b.measured_pairs
    weights_only = [n for n in with_target if frozenset((target, n)) not in own]
    lines = [f"The target <code>{html.escape(target)}</code> with: {code(with_target)}"
             + (f" ({code(weights_only)} by the weights only)" if weights_only else "") + "."]
    if without:
        lines.append(f"<b>Not</b> with: {code(without)}. Its rates within their categories, and their "
                     "coefficients in a model of the target, show the generator's model of that relation (through "
                     "the columns it did measure), not the table's; the intervals do not cover that.")
    rest = sorted((" – ".join(sorted(p)), p not in own) for p in b.measured_pairs if target not in p and len(p) == 2)
    lines.append("The other pairs measured together: " + (", ".join(
        html.escape(p) + (" (by the weights only)" if alone else "") for p, alone in rest) or "none") + ".")
    if weights_only or any(alone for _, alone in rest):
        lines.append("A pair measured by the weights only is the generator's model of that relation, moved by the "
                     "weights only as far as their noisy measurement shows it: where that measurement is weak (few "
                     "rows in its cells), estimates on the pair can be off by more than their interval. In a trial "
                     "on SLID (7,425 rows, ε = 1), the mean wage of people with 16 years of schooling or more missed "
                     "its interval in the 3 of 5 releases whose generator had not paired wages with education.")
    return lines


def _example(b) -> str:
    """A numeric column to show in the reading example (else the first column)."""
    return next((c.name for c in b.schema.columns if c.is_numeric), b.schema.columns[0].name)


def datasheet_html(folder: str | Path) -> str:
    """The datasheet of the bundle in ``folder`` (read with :func:`dpiw.analysis.load_bundle`)."""
    from dpiw.analysis import load_bundle
    from dpiw.analysis.estimates import kish_ess
    from dpiw.commands.export import weight_column

    b = load_bundle(folder, warn=False)
    if b.schema is None:
        raise ValueError(f"{folder}: a bundle without schema.json has no datasheet")
    m, rel = b.manifest, b.manifest.get("release", {})
    tight = m.get("spent", {}).get("tightest") or m.get("spent", {})
    relation = {"replace_one": "replace-one (any one person's row swapped for another's)",
                "add_remove": "add/remove (any one person's row added or removed)"}.get(
        m.get("neighbours", {}).get("relation", "replace_one"), "replace-one")
    guarantee = (f"({tight.get('epsilon', float('nan')):.4g}, {tight.get('delta', float('nan')):.3g})-differential "
                 "privacy for the whole release" if m.get("dp") else "NOT differentially private")
    stages = [f"{r['stage']}: {html.escape(r['mechanism'])}" for r in m.get("records", [])
              if r.get("dp") and (r.get("epsilon") or 0) > 0]
    k, limit = rel.get("pareto_k"), rel.get("pareto_k_threshold")
    ess = kish_ess(b.weights) / len(b.weights)
    from dpiw.analysis.bin_bias import crowded, far_rows, far_text, pile_lines

    lost = crowded(b.schema, b.measurements)  # read off the published fine histograms once, for the page
    piled = {name: [line] for name, line in pile_lines(b.schema, b.measurements).items()}  # one line per column
    for found in far_rows(b.schema, b.measurements):  # rows far out that the measurement cannot tell from noise
        piled.setdefault(found[0], []).append(far_text(*found, column=b.schema.column(found[0])))
    can, cannot = _trust(b, lost)
    together = _measured_together(b)
    name = b.schema.name
    facts = [("guarantee", guarantee), ("neighbours", relation),
             ("made by", "; ".join(stages) or "–"),
             ("rows", f"{len(b.data):,} synthetic rows, {len(b.schema.columns)} columns; target "
                      f"<code>{html.escape(b.schema.target)}</code> ({b.schema.task})"),
             ("weights", f"Kish ESS {ess:.0%} of the rows; Pareto k-hat "
                         + ("–" if k is None else f"{k:.2f}") + (f" (threshold {limit:.2f})" if limit else "")),
             ("release", ("fit to release: " if rel.get("fit_to_release") else "NOT fit to release: ")
              + html.escape("; ".join(rel.get("reasons", []))))]
    cards = "".join(_card(b, c, lost, piled) for c in b.schema.columns)
    body = [f"<h1>{html.escape(name)}: differentially private synthetic data with importance weights</h1>",
            "<dl class=\"facts\">" + "".join(f"<dt>{a}</dt><dd>{v}</dd>" for a, v in facts) + "</dl>",
            "<h2>What it can be trusted for</h2><ul>" + "".join(f"<li>{c}</li>" for c in can) + "</ul>",
            "<h2>What it cannot</h2><ul>" + "".join(f"<li>{c}</li>" for c in cannot) + "</ul>",
            *(["<h2>Which columns were measured together</h2><ul>" + "".join(f"<li>{c}</li>" for c in together)
               + "</ul>"] if together else []),
            "<h2>Reading it</h2><pre>"
            "# Python, with the dpiw package (its analyst install): intervals that carry the DP noise\n"
            "from dpiw.analysis import load_bundle\n"
            f"b = load_bundle(\"release\")\nprint(b.mean(\"{_example(b)}\"))\n\n"
            "# R: dpiw export release rows.csv, then\n"
            f"d &lt;- read.csv(\"rows.csv\"); weighted.mean(d${_example(b)}, d${weight_column(b.data.columns)})</pre>",
            "<h2>Each column</h2><p class=\"key\">per bin or category, the bars:<span class=\"m\"></span>the "
            "generator's noisy measured share<span class=\"u\"></span>released, unweighted<span class=\"w\"></span>"
            "released, weighted; the numbers: the measured share and the weighted one. Everything on this page "
            "is a DP output or public: none of it was read from the private "
            "rows.</p>",
            f"<div class=\"cols\" id=\"columns\">{cards}</div>"]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(name)} datasheet</title>{STYLE}</head><body>\n" + "\n".join(body)
            + "\n</body></html>\n")


def write_datasheet(folder: str | Path) -> Path:
    """Write ``datasheet.html`` into the bundle's folder."""
    path = Path(folder) / DATASHEET
    path.write_text(datasheet_html(folder))
    return path


__all__ = ["DATASHEET", "datasheet_html", "write_datasheet"]
