"""The studies that measure the project: whether the weights pay on real tables (usefulness), the paper's tables
beside dpiw's (paper_compare), and the docs' figures from a named run (docs_figures)."""
