"""The results page's counting (dpiw.studies.paper_compare): the paper's own counts come out of the transcribed
tables as the issue states them, and dpiw's paired counts are right on a constructed runs table."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpiw.stages import paper_compare as stage
from dpiw.studies.paper_compare import VS_MATCHED, VS_NONE, count_claims, paired, read_paper

ROOT = Path(__file__).resolve().parents[2]
PAPER = read_paper(ROOT / "data/paper/ghalebikesabi2022_tables.csv")


def fake_runs(shift: dict[str, float], noise=0.01, seeds=10, rng_seed=0) -> pd.DataFrame:
    """Every (dataset, sdgp, metric) cell of Tables 1-2; method value = None's value improved by shift[m] (in
    the metric's own direction), plus small seed noise."""
    rng = np.random.default_rng(rng_seed)
    rows = []
    cells = PAPER[PAPER.table.isin([1, 2])][["dataset", "sdgp"]].drop_duplicates()
    for c in cells.itertuples():
        for seed in range(seeds):
            base = {"wst": 1.0, "beta_mse": 1.0, "mlp_auc": 0.7, "mlp_mse": 1.0, "ess_fraction": 1.0}
            for m in ("none", "none_split", "beta_noised", "beta_debiased", "dp_mlp", "discriminator", "logreg",
                      "mlp"):
                d = shift.get(m, 0.0) + noise * rng.standard_normal()
                rows.append({"dataset": c.dataset, "eps": 1.0, "sdgp": c.sdgp, "seed": seed, "post": "none",
                             "weights": m, "wst": base["wst"] - d, "beta_mse": base["beta_mse"] - d,
                             "mlp_auc": base["mlp_auc"] + d, "mlp_mse": base["mlp_mse"] - d, "ess_fraction": 0.5})
    return pd.DataFrame(rows)


def test_the_paper_counts_match_its_tables():
    claims = {c.key: c for c in count_claims(fake_runs({}), PAPER)}
    assert (claims["iw_beats_none"].paper_holds, claims["iw_beats_none"].total) == (98, 135)
    assert (claims["some_dp_beats_none"].paper_holds, claims["some_dp_beats_none"].total) == (23, 24)
    assert (claims["debiased_beats_noised"].paper_holds, claims["debiased_beats_noised"].total) == (15, 24)
    assert (claims["named:discriminator"].paper_holds, claims["named:discriminator"].total) == (14, 15)
    assert claims["named:beta_debiased"].total == claims["named:dp_mlp"].total == 24
    assert (claims["housing_privbayes"].paper_holds, claims["housing_privbayes"].total) == (7, 15)


def test_paired_counts_follow_the_metric_direction():
    runs = fake_runs({"beta_debiased": 0.2, "beta_noised": 0.1, "dp_mlp": -0.2, "discriminator": 0.2})
    claims = {c.key: c for c in count_claims(runs, PAPER)}
    deb = claims["debiased_beats_noised"].tallies["beta_noised"]
    assert deb.beats == deb.compared == deb.wins == 24
    assert claims["named:discriminator"].tallies[VS_MATCHED].wins == 15
    dp_mlp = claims["named:dp_mlp"].tallies[VS_NONE]
    assert dp_mlp.wins == 0 and dp_mlp.losses == 24
    iw = claims["iw_beats_none"].tallies[VS_NONE]
    # beta_noised, beta_debiased beat None in every cell (48), discriminator in the 15 GAN cells; dp_mlp never;
    # logreg and mlp (no shift) by chance only, and never by the margin
    assert 48 + 15 <= iw.beats <= 48 + 15 + 2 * 24 and iw.compared == 135 and iw.wins == 48 + 15
    assert claims["some_dp_beats_none"].tallies[VS_MATCHED].wins == 24
    r = paired(runs, dataset="breast", eps=1.0, sdgp="dpgan", metric="wst", method="dp_mlp", control="none")
    assert r.n == 10 and r.mean == pytest.approx(-0.2, abs=0.02) and not r.beats and r.loss()


def test_each_method_meets_its_matched_control():
    """The SDGP on the split share is worse than on the whole epsilon. BetaDebiased only undoes that loss: it beats
    its matched control (unit weights on its own split-share rows) but not None on the whole epsilon. The
    discriminator spends nothing and weights the whole-epsilon rows: its control is None, and beating None on the
    split share would be a head start, not a win."""
    runs = fake_runs({"none_split": -0.3, "beta_debiased": -0.3 + 0.3, "discriminator": 0.0})
    claims = {c.key: c for c in count_claims(runs, PAPER)}
    deb = claims["named:beta_debiased"]
    assert deb.tallies[VS_MATCHED].wins == 24 and deb.tallies[VS_NONE].wins == 0
    disc = claims["named:discriminator"]
    assert disc.tallies[VS_MATCHED].wins == disc.tallies[VS_NONE].wins == 0
    assert paired(runs, dataset="breast", eps=1.0, sdgp="dpgan", metric="wst", method="discriminator",
                  control="none_split").win()  # the comparison the old page made


def test_a_win_needs_the_margin_as_well_as_2_se():
    runs = fake_runs({"beta_debiased": 0.002}, noise=0.0001)  # 0.2% of the control's mean, tens of SE
    t = {c.key: c for c in count_claims(runs, PAPER)}["named:beta_debiased"].tallies[VS_MATCHED]
    assert t.beyond_2se == 24 and t.wins == 0
    runs = fake_runs({"beta_debiased": 0.05}, noise=0.0001)
    assert {c.key: c for c in count_claims(runs, PAPER)}["named:beta_debiased"].tallies[VS_MATCHED].wins == 24


def test_no_winners_curse_without_an_effect():
    """No method has an effect: some of the four DP methods lies beyond 2 SE in many cells by chance (picking the
    best by its mean would claim them), the Holm-adjusted count stays near zero."""
    wins = beyond = 0
    for replicate in range(6):
        runs = fake_runs({}, noise=0.05, seeds=5, rng_seed=replicate)
        some = {c.key: c for c in count_claims(runs, PAPER)}["some_dp_beats_none"].tallies[VS_MATCHED]
        assert some.compared == 24
        wins, beyond = wins + some.wins, beyond + some.beyond_2se
    # 6 x 24 cells (8 independent datasets x SDGP each): unadjusted, some method passes 2 SE in ~20% of them
    assert wins <= 0.05 * 144 and beyond >= 0.1 * 144


def test_the_page_is_written_with_every_section(tmp_path):
    runs = fake_runs({"beta_debiased": 0.2})
    runs.to_csv(tmp_path / "runs.csv", index=False)
    stage.main(["--runs", str(tmp_path / "runs.csv"), "--paper", str(ROOT / "data/paper/ghalebikesabi2022_tables.csv"),
                "--out", str(tmp_path / "results.md")])
    text = (tmp_path / "results.md").read_text()
    for heading in ("## The paper's claims", "## How the numbers are made", "### Table 1: breast, WST",
                    "### Table 2: housing, MLP MSE", "## Table 3 analogue", "## Figure 2"):
        assert heading in text
    assert "| BetaDebiased beats BetaNoised | 15/24 | vs BetaNoised: 24/24 (24; **24** / 0) | – | holds |" in text
    assert "| BetaDebiased beats None | 19/24 | 24/24 (24; **24** / 0) | 24/24 (24; **24** / 0) | holds |" in text


def test_the_ablation_section_sets_both_accountings_side_by_side(tmp_path):
    fake_runs({"beta_debiased": 0.2}).assign(n_synth=400).to_csv(tmp_path / "runs.csv", index=False)
    fake_runs({"beta_noised": 0.3}).assign(n_synth=400).to_csv(tmp_path / "ablation.csv", index=False)
    stage.main(["--runs", str(tmp_path / "runs.csv"), "--ablation-runs", str(tmp_path / "ablation.csv"),
                "--paper", str(ROOT / "data/paper/ghalebikesabi2022_tables.csv"), "--out", str(tmp_path / "r.md"),
                "--schemas", str(ROOT / "data/schemas")])
    text = (tmp_path / "r.md").read_text()
    assert "## The paper-accounting ablation (NOT DP, never releasable)" in text
    # BetaDebiased beats BetaNoised in every cell of the first run and in none of the ablation's
    assert "| BetaDebiased beats BetaNoised | 15/24 | 24/24 (24; **24** / 0) | 0/24 (0; **0** / 24) | – |" in text
    # the paper's rho on breast: 2 sqrt(32) / (400 * 0.1 * 0.9), dpiw's R = sqrt(31 + 1) times larger
    assert "| breast | 32 | 5.66 | 400 | 0.30 | 2.83 | 0.31 | 1.78 |" in text
