"""The figures the README and docs show, taken from a named config's run and stamped with what made them.

    python -m dpiw.studies.docs_figures --results results/default --config params.yaml      (make docs)

copies Figure 1 and Figure 2 of that run into docs/ and writes docs/figures.json: the config they came
from and its SHA-256, the SHA-256 of the code that draws them, and each PNG's SHA-256. A test
(tests/unit/test_docs_figures.py) checks the stamp against the current code, config and files, so a figure
can never be older than what draws it: change either, and `make docs` must run again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
STAMP = DOCS / "figures.json"
#: the figures the docs show, as the workflow names them under results/<config>/figures/
FIGURES = ("fig1_toy_weights.png", "fig2_bayes.png")
#: the code that draws them (relative to the package)
DRAWING_CODE = ("evaluate/figures.py", "stages/figures.py")


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def drawing_digest() -> str:
    h = hashlib.sha256()
    for rel in DRAWING_CODE:
        h.update(rel.encode() + b"\0" + (Path(__file__).parents[1] / rel).read_bytes())
    return h.hexdigest()


def stamp(config: Path) -> dict:
    """What the docs' figures must have been made by now: the config and the drawing code."""
    return {"config": config.relative_to(ROOT).as_posix(), "config_sha256": sha256(config),
            "drawing_code_sha256": drawing_digest()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m dpiw.studies.docs_figures", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", required=True, help="the run's folder, results/<config>")
    p.add_argument("--config", required=True, help="the config it ran (params.yaml, or params.yaml + a configfile)")
    args = p.parse_args(argv)
    figures = {}
    for name in FIGURES:
        src = Path(args.results) / "figures" / name
        if not src.is_file():
            raise SystemExit(f"error: {src}: no such figure; run the config first (snakemake --cores all)")
        shutil.copyfile(src, DOCS / name)
        figures[name] = sha256(DOCS / name)
    STAMP.write_text(json.dumps({**stamp((ROOT / args.config).resolve()), "results": args.results,
                                 "figures": figures}, indent=1) + "\n")
    print(f"docs_figures: {', '.join(figures)} from {args.results} -> docs/ ({STAMP.name})")


if __name__ == "__main__":
    main()
