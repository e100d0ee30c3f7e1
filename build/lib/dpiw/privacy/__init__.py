"""Everything that decides what a release may spend and what it may say.

- ``spend``: one stage's privacy record (PrivacySpend), a run's basic sum and its budget check, the
  budget split between the generator and the weights, the run's delta.
- ``accounting``: Renyi-DP curves of every mechanism and their composition to (epsilon, delta).
- ``neighbours``: the neighbouring relation (replace-one or add/remove) and the sensitivities under it.
- ``mechanisms``: noise calibration (analytic Gaussian, Laplace).
- ``seeding``: where each mechanism's noise comes from (public seeds for benchmarks, OS entropy for
  releases) and the digests of files.
- ``release``: what a run's bundle holds, or why it is refused.
- ``ledger``: a dataset's lifetime budget over (epsilon, delta) and its admissions;
  ``store``: the append-only, hash-chained table that keeps them (SQLite, or PostgreSQL).
"""
