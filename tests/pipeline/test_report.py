"""The report as a person sees it: the tiny grid's report.html opened in headless Chromium (Debian's, installed
when missing), clicked through like a reader does, with the summary table, both figures and the runs'
manifests on screen."""

import json

import pytest
from browser import Page, ensure_chromium

pytestmark = pytest.mark.slow

EYE = "a[iconname=eye]"  # the report's "view" button in a result's row


@pytest.fixture(scope="module")
def page():
    exe = ensure_chromium()
    if exe is None:
        pytest.skip("no chromium, and it cannot be installed here (needs root and apt-get)")
    p = Page(exe)
    yield p
    p.close()


def _show(page, url, category, filename):
    page.open(url)
    page.wait(f"document.body.innerText.includes({json.dumps(category)})")
    page.click_text(category)
    page.wait(f"document.body.innerText.includes({json.dumps(filename)})")
    page.click_selector_in_row(filename, EYE)


def test_report_shows_summary_figures_and_manifests(snakemake_run, page):
    wd = snakemake_run
    url = (wd / "results/default/report.html").as_uri()
    _show(page, url, "Summary", "summary.html")
    summary = page.frame_text("data:text/html")
    assert "Summary: does weighting help?" in summary and "vs matched control" in summary
    assert "\ttoy\t" in "\t" + summary.replace("\n", "\t")  # a row of the tiny grid's toy data
    for fig in ("fig1_toy_weights.png", "fig2_bayes.png"):
        _show(page, url, "Figures", fig)
        width = page.wait("(() => { const i = Array.from(document.querySelectorAll('img')).find("
                          "i => i.src.startsWith('data:image/png')); return i && i.complete && i.naturalWidth; })()")
        assert width > 400, fig
    _show(page, url, "Privacy", "manifests.html")
    manifests = page.frame_text("data:text/html")
    n_runs = sum(p.parent.name != "release" for p in (wd / "results/default/runs").rglob("manifest.json"))
    assert f"{n_runs} runs" in manifests and "within budget" in manifests
    assert "toy/eps=1/seed=0/uniform/true/none" in manifests  # one run, by its id
