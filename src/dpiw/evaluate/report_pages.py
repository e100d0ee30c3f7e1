"""Two HTML pages for the workflow's report: the summary table, and every run's manifest (what it spent, under
which neighbouring relation, and whether its bundle may be published). Self-contained (inline CSS, no
script), so that Snakemake's report can show them as they are."""

from __future__ import annotations

import html
import math
import re

import pandas as pd

from dpiw.evaluate import summary_table

STYLE = """<style>
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.better { font-weight: bold; color: #0a6b2d; }
.worse { color: #9b1c1c; }
.no { color: #9b1c1c; }
details { margin: 0.2em 0; }
#answer { font-size: 1.15em; max-width: 60em; }
.method { color: #555; font-size: 0.9em; max-width: 60em; }
</style>"""

#: a table with more rows than this is folded (a <details> the reader opens)
FOLD_ROWS = 20


def _fold(table: str, n_rows: int, what: str) -> str:
    """``table`` as it is when short, else folded under a one-line summary."""
    if n_rows <= FOLD_ROWS:
        return table
    return f"<details><summary>{html.escape(what)} ({n_rows} rows)</summary>{table}</details>"


def _page(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title>{STYLE}</head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _num(x, fmt=".3f") -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def summary_html(runs: pd.DataFrame) -> str:
    """The summary table (dpiw.evaluate.summary_table) as a page: the same rows, rule and verdicts as metrics.md."""
    rows = summary_table.summary_rows(runs)
    body = ["<h1>Summary: does weighting help?</h1>",
            f"<p id=\"headline\">{html.escape(summary_table.headline(rows))}</p>"]
    table = ["<table id=\"summary\"><thead><tr><th>dataset</th><th>ε</th><th>SDGP</th><th>no weights</th>"
             "<th>DP weights</th><th>its WST</th><th>vs matched control</th><th>verdict</th>"
             "<th>vs None on the whole ε</th><th>verdict</th></tr></thead><tbody>"]

    def cls(v: str) -> str:
        return "better" if v == "better" else "worse" if v == "worse" else ""

    for r in rows.itertuples():
        name = html.escape(r.weights) + ("" if r.fit_to_release else " ‡")
        matched = summary_table.change_text(r.vs_matched_change, r.vs_matched_se)
        table.append(f"<tr><td>{html.escape(str(r.dataset))}</td><td class=\"num\">{float(r.eps):g}</td>"
                     f"<td>{html.escape(str(r.sdgp))}</td><td class=\"num\">{_num(r.none)}&nbsp;±&nbsp;"
                     f"{_num(r.none_se)}</td><td class=\"{cls(r.vs_matched_verdict)}\">{name}</td>"
                     f"<td class=\"num\">{_num(r.mean)}</td>"
                     f"<td class=\"num\">{_nowrap(matched)} (vs {html.escape(r.control)})</td>"
                     f"<td class=\"{cls(r.vs_matched_verdict)}\">{r.vs_matched_verdict}</td>"
                     f"<td class=\"num\">{_nowrap(summary_table.change_text(r.vs_none_change, r.vs_none_se))}</td>"
                     f"<td class=\"{cls(r.vs_none_verdict)}\">{r.vs_none_verdict}</td></tr>")
    table.append("</tbody></table>")
    body.append(_fold("".join(table), len(rows), "every cell and DP weight method, with its change and verdict"))
    body.append("<p class=\"method\">How to read it: per dataset, ε and SDGP (post chain none), the Wasserstein "
                "distance to the real rows (WST, lower is better) without weights, and every DP weight method (never "
                "the oracle <code>true</code> or a non-DP reference) against its matched control (unit weights on "
                "exactly its own rows) and against None on the whole ε. Rule: "
                f"{html.escape(summary_table.RULE)}. Bold green: better than its control; ‡: a seed's weights fail "
                "the PSIS release gate.</p>")
    return _page("dpiw summary", body)


def _nowrap(text: str) -> str:
    """A change ± its SE on one line."""
    return html.escape(text).replace(" ± ", "&nbsp;±&nbsp;")


def _kind(m: dict) -> tuple[str, str, str]:
    """What a run's manifest says, without the run's name or its own numbers: its relation, its verdict and its
    release verdict (each run's epsilons and k-hat are in the folded table below)."""
    release = m["release"]
    fit = "fit to release" if release["fit_to_release"] else "not fit: " + "; ".join(release["reasons"])

    def general(text: str) -> str:
        return re.sub(r"(?<![\w.])[-+]?\d[\d.]*(e-?\d+)?", "x", re.sub(r"\s*\([^)]*\d[^)]*\)", "", text))

    return m.get("neighbours", {}).get("relation", "replace_one"), general(m["verdict"]), general(fit)


def manifests_html(manifests: list[dict]) -> str:
    """One line per kind of run (the same relation, verdict and release verdict), then every run's spend, its
    guarantee and its records, folded."""
    kinds: dict[tuple, list[dict]] = {}
    for m in manifests:
        kinds.setdefault(_kind(m), []).append(m)
    body = ["<h1>Privacy manifests</h1>",
            f"<p>{len(manifests)} runs, {len(kinds)} kind(s). A bundle is fit to release only in release mode, "
            "with secret noise, DP, and weights that pass the PSIS k-hat gate; a benchmark run's noise is public, "
            "so its bundle never is.</p>",
            "<table id=\"kinds\"><thead><tr><th>runs</th><th>neighbours</th><th>verdict</th><th>release</th>"
            "<th>guarantee ε (lowest to highest)</th></tr></thead><tbody>"]
    lines = []
    for (relation, verdict, fit), group in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
        eps = [g["spent"].get("tightest", {}).get("epsilon") for g in group if g["dp"]]
        eps = [e for e in eps if e is not None]
        span = f"{min(eps):.4g} to {max(eps):.4g}" if eps else "not DP"
        lines.append(f"<tr><td class=\"num\">{len(group)}</td><td>{relation}</td><td>{html.escape(verdict)}</td>"
                     f"<td class=\"{'' if fit == 'fit to release' else 'no'}\">{html.escape(fit)}</td>"
                     f"<td class=\"num\">{span}</td></tr>")
    body[-1] = _fold(body[-1] + "".join(lines) + "</tbody></table>", len(lines), "the kinds of run")
    table = ["<table id=\"manifests\"><thead><tr><th>run</th><th>neighbours</th><th>budget ε</th><th>spent ε</th>"
             "<th>guarantee (ε, δ)</th><th>verdict</th></tr></thead><tbody>"]
    for m in sorted(manifests, key=lambda m: m["run"]):
        spent, tight = m["spent"], m["spent"].get("tightest") or {}
        guarantee = f"({_num(tight.get('epsilon'), '.4g')}, {_num(tight.get('delta'), '.3g')})" if m["dp"] else "NOT DP"
        records = "".join(
            f"<tr><td>{html.escape(r['stage'])}</td><td>{html.escape(r['mechanism'])}</td>"
            f"<td class=\"num\">{_num(r['epsilon'], '.4g') if r['dp'] else 'not DP'}</td>"
            f"<td class=\"num\">{_num(r['delta'], '.3g') if r['dp'] else ''}</td></tr>" for r in m["records"])
        table.append(
            f"<tr><td><details><summary>{html.escape(m['run'])}</summary><table><tr><th>stage</th><th>mechanism"
            f"</th><th>ε</th><th>δ</th></tr>{records}</table></details></td><td>{_kind(m)[0]}</td>"
            f"<td class=\"num\">{_num(m['budget']['epsilon'], '.4g')}</td>"
            f"<td class=\"num\">{_num(spent['epsilon'], '.4g') if m['dp'] else 'not DP'}</td>"
            f"<td class=\"num\">{guarantee}</td><td>{html.escape(m['verdict'])}</td></tr>")
    table.append("</tbody></table>")
    body.append(_fold("".join(table), len(manifests), "every run: its spend, guarantee and records"))
    body.append("<p class=\"method\">Spent: the sum of the stages' epsilons (basic composition); guarantee: the "
                "tighter of that and the RDP composition at the run's delta.</p>")
    return _page("dpiw privacy manifests", body)


def _body(page: str) -> str:
    """What lies between a page's <body> tags (the pages above), its first heading one level down."""
    inner = page.split("<body>", 1)[-1].rsplit("</body>", 1)[0]
    return inner.replace("<h1>", "<h2>", 1).replace("</h1>", "</h2>", 1)


def report_html(title: str, *, summary: str, manifests: str, figures: list[tuple[str, bytes, str]],
                provenance: str) -> str:
    """The run's report, the answer first: the summary (does weighting help?), the figures (PNG bytes inlined,
    with their captions), every run's manifest, and last a link to the workflow's provenance (Snakemake's report:
    the rule graph, the code, the config and the run times). One self-contained file."""
    import base64

    answer = re.search(r'<p id="headline">(.*?)</p>', summary, re.S)
    summary = summary.replace(answer.group(0), "") if answer else summary  # said once, first
    sections = [f"<h1>{html.escape(title)}</h1>",
                *([f"<p id=\"answer\">{answer.group(1)}</p>"] if answer else []),
                "<p><a href=\"#summary-section\">Does weighting help?</a> · <a href=\"#figures\">Figures</a> · "
                "<a href=\"#privacy\">Privacy</a> · <a href=\"#provenance\">Provenance</a></p>",
                f"<section id=\"summary-section\">{_body(summary)}</section>",
                "<section id=\"figures\"><h2>Figures</h2>"]
    for name, png, caption in figures:
        data = base64.b64encode(png).decode()
        sections.append(f"<figure><img alt=\"{html.escape(name)}\" src=\"data:image/png;base64,{data}\" "
                        f"style=\"max-width:100%\"><figcaption>{html.escape(caption)}</figcaption></figure>")
    sections += ["</section>", f"<section id=\"privacy\">{_body(manifests)}</section>",
                 "<section id=\"provenance\"><h2>Provenance</h2><p>How these results were made - the rule graph, "
                 f"the code of every rule, the config and the run times: <a href=\"{html.escape(provenance)}\">"
                 f"{html.escape(provenance)}</a> (Snakemake's report).</p></section>"]
    return _page(title, sections)
