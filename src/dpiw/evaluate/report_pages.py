"""Two HTML pages for the workflow's report: the summary table, and every run's manifest (what it spent, under
which neighbouring relation, and whether its bundle may be published). Self-contained (inline CSS, no
script), so that Snakemake's report can show them as they are."""

from __future__ import annotations

import html
import math

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
</style>"""


def _page(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title>{STYLE}</head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _num(x, fmt=".3f") -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def summary_html(runs: pd.DataFrame) -> str:
    """The summary table (dpiw.evaluate.summary_table) as a page: the same rows, rule and verdicts as metrics.md."""
    rows = summary_table.summary_rows(runs)
    body = ["<h1>Summary: does weighting help?</h1>",
            "<p>Per dataset, ε and SDGP (post chain none): the Wasserstein distance to the real rows (WST, lower is "
            "better) without weights, and every DP weight method (never the oracle <code>true</code> or a non-DP "
            "reference) against its matched control (unit weights on exactly its own rows) and against None on the "
            f"whole ε. Rule: {html.escape(summary_table.RULE)}. Bold green: better than its control; ‡: a seed's "
            "weights fail the PSIS release gate.</p>",
            f"<p id=\"headline\">{html.escape(summary_table.headline(rows))}</p>",
            "<table id=\"summary\"><thead><tr><th>dataset</th><th>ε</th><th>SDGP</th><th>no weights</th>"
            "<th>DP weights</th><th>its WST</th><th>vs matched control</th><th>verdict</th>"
            "<th>vs None on the whole ε</th><th>verdict</th></tr></thead><tbody>"]

    def cls(v: str) -> str:
        return "better" if v == "better" else "worse" if v == "worse" else ""

    for r in rows.itertuples():
        name = html.escape(r.weights) + ("" if r.fit_to_release else " ‡")
        matched = summary_table.change_text(r.vs_matched_change, r.vs_matched_se)
        body.append(f"<tr><td>{html.escape(str(r.dataset))}</td><td class=\"num\">{float(r.eps):g}</td>"
                    f"<td>{html.escape(str(r.sdgp))}</td><td class=\"num\">{_num(r.none)} ± {_num(r.none_se)}</td>"
                    f"<td class=\"{cls(r.vs_matched_verdict)}\">{name}</td><td class=\"num\">{_num(r.mean)}</td>"
                    f"<td class=\"num\">{matched} (vs {html.escape(r.control)})</td>"
                    f"<td class=\"{cls(r.vs_matched_verdict)}\">{r.vs_matched_verdict}</td>"
                    f"<td class=\"num\">{summary_table.change_text(r.vs_none_change, r.vs_none_se)}</td>"
                    f"<td class=\"{cls(r.vs_none_verdict)}\">{r.vs_none_verdict}</td></tr>")
    body.append("</tbody></table>")
    return _page("dpiw summary", body)


def manifests_html(manifests: list[dict]) -> str:
    """One row per run: the spend, the guarantee, the relation and the release verdict; each run's records in a
    collapsible detail."""
    body = ["<h1>Privacy manifests</h1>",
            f"<p>{len(manifests)} runs. Spent: the sum of the stages' epsilons (basic composition); guarantee: the "
            "tighter of that and the RDP composition at the run's delta. A bundle is fit to release only in "
            "release mode, with secret noise, DP, and weights that pass the PSIS k-hat gate.</p>",
            "<table id=\"manifests\"><thead><tr><th>run</th><th>neighbours</th><th>budget ε</th><th>spent ε</th>"
            "<th>guarantee (ε, δ)</th><th>verdict</th><th>release</th></tr></thead><tbody>"]
    for m in sorted(manifests, key=lambda m: m["run"]):
        spent, tight = m["spent"], m["spent"].get("tightest") or {}
        guarantee = f"({_num(tight.get('epsilon'), '.4g')}, {_num(tight.get('delta'), '.3g')})" if m["dp"] else "NOT DP"
        release = m["release"]
        fit = "fit to release" if release["fit_to_release"] else "not fit: " + "; ".join(release["reasons"])
        records = "".join(
            f"<tr><td>{html.escape(r['stage'])}</td><td>{html.escape(r['mechanism'])}</td>"
            f"<td class=\"num\">{_num(r['epsilon'], '.4g') if r['dp'] else 'not DP'}</td>"
            f"<td class=\"num\">{_num(r['delta'], '.3g') if r['dp'] else ''}</td></tr>" for r in m["records"])
        relation = m.get("neighbours", {}).get("relation", "replace_one")
        body.append(
            f"<tr><td><details><summary>{html.escape(m['run'])}</summary><table><tr><th>stage</th><th>mechanism"
            f"</th><th>ε</th><th>δ</th></tr>{records}</table></details></td><td>{relation}</td>"
            f"<td class=\"num\">{_num(m['budget']['epsilon'], '.4g')}</td>"
            f"<td class=\"num\">{_num(spent['epsilon'], '.4g') if m['dp'] else 'not DP'}</td>"
            f"<td class=\"num\">{guarantee}</td><td>{html.escape(m['verdict'])}</td>"
            f"<td class=\"{'' if release['fit_to_release'] else 'no'}\">{html.escape(fit)}</td></tr>")
    body.append("</tbody></table>")
    return _page("dpiw privacy manifests", body)
