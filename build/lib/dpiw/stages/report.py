"""Stage `report`: the run's report.html, the answer first. The summary table (does weighting help?), the
figures with their captions, every run's privacy manifest, and last a link to the workflow's provenance
(Snakemake's own report: the rule graph, the code, the config). One self-contained HTML file."""

from __future__ import annotations

from pathlib import Path

from dpiw import DpiwError
from dpiw.evaluate.report_pages import report_html
from dpiw.io import write_text
from dpiw.stages._cli import Parser, run


def parse_args(argv):
    p = Parser(prog="dpiw report", description=__doc__)
    p.add_argument("--title", required=True, help="the report's heading (the config's name)")
    p.add_argument("--summary-html", required=True, help="tables/summary.html (the aggregate stage's)")
    p.add_argument("--manifests-html", required=True, help="tables/manifests.html (the aggregate stage's)")
    p.add_argument("--figure", nargs=2, action="append", default=[], metavar=("PNG", "CAPTION"),
                   help="a figure and its caption (a text file); repeat in the order to show")
    p.add_argument("--provenance", required=True, help="the provenance report's file name, beside --out")
    p.add_argument("--out", required=True)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    for path in (args.summary_html, args.manifests_html, *(f for pair in args.figure for f in pair)):
        if not Path(path).is_file():
            raise DpiwError(f"{path}: file not found; rerun the stage that writes it")
    figures = [(Path(png).name, Path(png).read_bytes(), " ".join(Path(caption).read_text().split()))
               for png, caption in args.figure]
    page = report_html(args.title, summary=Path(args.summary_html).read_text(),
                       manifests=Path(args.manifests_html).read_text(), figures=figures,
                       provenance=args.provenance)
    write_text(page, args.out)
    print(f"report: {args.out} ({len(figures)} figures; provenance in {args.provenance})")


if __name__ == "__main__":
    run(main)
