"""The report as a person sees it: the tiny grid's report.html opened in headless Chromium (Debian's, installed
when missing): the answer on the first screen, both figures, the runs' manifests, and the provenance last."""

import re

import pytest
from browser import Page, ensure_chromium
from helpers import unavailable

pytestmark = pytest.mark.slow

@pytest.fixture(scope="module")
def page():
    exe, reason = ensure_chromium()
    if exe is None:
        unavailable(reason)
    p = Page(exe)
    yield p
    p.close()


def test_report_opens_on_the_answer_then_figures_manifests_and_provenance(snakemake_run, page):
    """report.html as a reader sees it: the first screen holds the summary table (does weighting help?), the
    figures are images on the same page, every run's manifest follows, and last a link to the provenance report
    (Snakemake's), which opens."""
    wd = snakemake_run
    out = wd / "results/default"
    page.open((out / "report.html").as_uri())
    # the first screen (headless: 800 x 600) holds the answer, one plain sentence
    box = page.evaluate("(() => { const r = document.querySelector('#answer').getBoundingClientRect(); "
                        "return [r.top, r.bottom]; })()")
    assert 0 < box[0] and box[1] < 600, box
    answer = page.evaluate("document.querySelector('#answer').innerText")
    assert answer.startswith("Does weighting help? Against unit weights on the same synthetic rows") and \
        re.search(r"clearly better in \d+ of \d+ cells", answer), answer
    # no table of more than 20 rows is open: each such table sits in a closed <details>
    open_long = page.evaluate("Array.from(document.querySelectorAll('table')).filter(t => t.rows.length > 21 && "
                              "!(t.closest('details') && !t.closest('details').open)).length")
    assert open_long == 0, open_long
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")  # a reader opens them
    text = page.evaluate("document.body.innerText")
    assert "Summary: does weighting help?" in text and "vs matched control" in text
    assert "\ttoy\t" in "\t" + page.evaluate("document.querySelector('#summary').innerText").replace("\n", "\t")
    widths = page.evaluate("Array.from(document.querySelectorAll('#figures img')).map(i => i.complete && "
                           "i.naturalWidth)")
    assert len(widths) == 2 and min(widths) > 400, widths
    order = page.evaluate("['summary-section', 'figures', 'privacy', 'provenance'].map(id => "
                          "document.getElementById(id).getBoundingClientRect().top)")
    assert order == sorted(order), order
    n_runs = sum(p.parent.name != "release" for p in (out / "runs").rglob("manifest.json"))
    manifests = page.evaluate("document.querySelector('#privacy').innerText")
    assert f"{n_runs} runs" in manifests and "within budget" in manifests
    kinds = page.evaluate("document.querySelector('#kinds').rows.length") - 1
    assert 1 <= kinds <= 6, kinds  # one line per kind of run, not one per run
    assert "toy/eps=1/seed=0/uniform/true/none" in manifests  # one run, by its id
    link = page.evaluate("document.querySelector('#provenance a').getAttribute('href')")
    assert link == "provenance.html" and (out / link).is_file()
    # the provenance page is Snakemake's report: it opens and renders
    page.open((out / link).as_uri())
    page.wait("document.body.innerText.includes('Summary')")


def test_every_bundle_carries_a_datasheet_drawn_from_its_own_files(snakemake_run, page, tmp_path):
    """datasheet.html as an analyst opens it: the guarantee on the first screen, one card per column with its
    released and measured shares drawn as bars, what to trust and what not, the lines that read it; made from
    the bundle's files alone (a copy of the folder, with nothing else, gives the same page)."""
    import json
    import shutil

    from dpiw.analysis.datasheet import datasheet_html

    bundle = next(p.parent for p in sorted((snakemake_run / "results/default/runs").rglob("release/manifest.json"))
                  if "/mst/" in str(p) or "/marginals/" in str(p))
    page.open((bundle / "datasheet.html").as_uri())
    facts = page.evaluate("document.querySelector('.facts').innerText")
    assert "-differential privacy for the whole release" in facts and "Kish ESS" in facts
    bottom = page.evaluate("document.querySelector('.facts').getBoundingClientRect().bottom")
    assert bottom < 600, bottom
    columns = json.loads((bundle / "schema.json").read_text())["schema"]["columns"]
    cards = page.evaluate("Array.from(document.querySelectorAll('#columns .col h3')).map(h => h.innerText)")
    assert [c.split(" (")[0] for c in cards] == [c["name"] for c in columns], cards
    bars = page.evaluate("Array.from(document.querySelectorAll('#columns .col')).map(c => "
                         "Array.from(c.querySelectorAll('.bar')).filter(b => b.getBoundingClientRect().width > 0)"
                         ".length)")
    assert min(bars) >= 2, bars
    text = page.evaluate("document.body.innerText")
    assert "What it can be trusted for" in text and "What it cannot" in text and "load_bundle" in text
    from dpiw.analysis import load_bundle
    from dpiw.analysis.datasheet import SIGNAL_MIN, signal

    snr = signal(load_bundle(bundle, warn=False))  # the generator's measurements against their own noise
    weak = snr is not None and snr < SIGNAL_MIN
    assert ("Much at all, at this size and ε" in text) is weak and ("A numeric column's mean" in text) is not weak
    alone = tmp_path / "release"
    shutil.copytree(bundle, alone)
    (alone / "datasheet.html").unlink()
    assert datasheet_html(alone) == (bundle / "datasheet.html").read_text()
