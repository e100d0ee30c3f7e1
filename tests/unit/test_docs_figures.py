"""The README's and docs' figures are what the current code draws from the named config: `make docs` copies
them from that config's run and stamps them (dpiw.studies.docs_figures); a change to the drawing code or the config
without `make docs` fails here."""

import json

from dpiw.studies.docs_figures import DOCS, FIGURES, ROOT, STAMP, sha256, stamp


def test_the_docs_figures_are_stamped_by_the_current_code_and_config():
    recorded = json.loads(STAMP.read_text())
    now = stamp(ROOT / recorded["config"])
    assert recorded["drawing_code_sha256"] == now["drawing_code_sha256"], \
        "the figure code changed since `make docs`: run it again"
    assert recorded["config_sha256"] == now["config_sha256"], f"{recorded['config']} changed since `make docs`"
    for name in FIGURES:
        assert recorded["figures"][name] == sha256(DOCS / name), f"docs/{name} is not the file `make docs` copied"


def test_the_readme_and_method_page_show_those_figures():
    assert "(docs/fig1_toy_weights.png)" in (ROOT / "README.md").read_text()
    assert "(fig1_toy_weights.png)" in (DOCS / "method.md").read_text()
