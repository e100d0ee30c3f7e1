"""Issue 7: importance-weighted Bayesian updating (sampler vs closed form), the MLP metric, pMSE, the
log-weight MSE, ROC-AUC, the figures and the aggregate tables."""

import math

import numpy as np
import pandas as pd
import pytest

from dpiw.evaluate.bayes import hmc, iw_model, multiclass_auc, roc_auc
from dpiw.evaluate.utility import log_weight_mse, mlp_metric, pmse


def _linear_data(seed, n=150, d=3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = np.hstack([X, np.ones((n, 1))]) @ np.array([1.0, -2.0, 0.5, 0.3])[: d + 1] + rng.normal(0, 0.3, n)
    return X, y, rng.lognormal(0, 0.8, n)


def test_weighted_bayesian_linear_regression_matches_the_closed_form():
    """Known sigma, prior N(0, tau^2 I): the IW posterior is N(m, S) with S^-1 = X'WX/sigma^2 + I/tau^2 and
    m = S X'Wy/sigma^2 (weights scaled to mean 1). 4000 HMC draws: mean within 4 Monte Carlo SE (the
    draws are nearly independent after the Laplace preconditioning; checked with batch means), and the
    covariance within 10%."""
    X, y, w = _linear_data(0)
    sigma, tau = 0.3, 5.0
    model = iw_model(X, y, w, task="regression", prior_scale=tau, sigma=sigma)
    A, wn = model.X, model.w
    assert wn.mean() == pytest.approx(1.0)
    S = np.linalg.inv(A.T @ (wn[:, None] * A) / sigma**2 + np.eye(A.shape[1]) / tau**2)
    m = S @ (A.T @ (wn * y)) / sigma**2
    draws = hmc(model.log_density, model.dim, rng=np.random.default_rng(1), n_samples=4000, n_warmup=500)
    assert 0.6 < draws.accept_rate < 0.97
    th = draws.theta
    batch_means = th.reshape(40, 100, -1).mean(axis=1)  # MC standard error by batch means
    se = batch_means.std(axis=0, ddof=1) / math.sqrt(40)
    assert (np.abs(th.mean(axis=0) - m) < 4 * se).all()
    np.testing.assert_allclose(np.cov(th.T), S, rtol=0.1, atol=0.1 * np.abs(S).max())
    # and the sampler is not merely returning the mode: wrong weights give a visibly different mean
    wrong = iw_model(X, y, np.ones_like(w), task="regression", prior_scale=tau, sigma=sigma)
    m_wrong = np.linalg.solve(A.T @ A / sigma**2 + np.eye(A.shape[1]) / tau**2, A.T @ y / sigma**2)
    assert np.abs(m_wrong - m).max() > 10 * se.max()
    assert wrong.dim == model.dim


@pytest.mark.parametrize("task, n_classes", [("classification", 2), ("classification", 3), ("regression", 0)])
def test_unit_weights_give_the_ordinary_posterior(task, n_classes):
    """w = 1: exp(sum_i log f) is the ordinary likelihood, so log density, gradient and draws coincide
    with the unweighted model's (computed here independently)."""
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(60, 2))
    y = rng.integers(0, max(n_classes, 2), 60) if task == "classification" else rng.normal(size=60)
    model = iw_model(X, y, np.ones(60), task=task, n_classes=n_classes, prior_scale=3.0)
    theta = rng.normal(size=model.dim)
    A = np.hstack([X, np.ones((60, 1))])
    if task == "regression":
        beta, sigma = theta[:3], math.exp(theta[3])
        ref = (-60 * math.log(sigma) - ((y - A @ beta) ** 2).sum() / (2 * sigma**2) - beta @ beta / 18
               - 0.5 * (theta[3] - math.log(0.1)) ** 2)
    elif n_classes == 2:
        z = A @ theta
        ref = (y * z - np.log1p(np.exp(z))).sum() - theta @ theta / 18
    else:
        Z = A @ theta.reshape(3, 3).T
        ref = (Z[np.arange(60), y] - np.log(np.exp(Z).sum(axis=1))).sum() - theta @ theta / 18
    assert model.log_density(theta)[0] == pytest.approx(ref, rel=1e-12)
    # gradient by central differences
    g = model.log_density(theta)[1]
    for j in range(model.dim):
        e = np.zeros(model.dim)
        e[j] = 1e-6
        num = (model.log_density(theta + e)[0] - model.log_density(theta - e)[0]) / 2e-6
        assert g[j] == pytest.approx(num, rel=1e-5, abs=1e-6)
    # weights are scaled to mean 1, so w = c (any c > 0) is the same posterior as w = 1
    scaled = iw_model(X, y, np.full(60, 7.5), task=task, n_classes=n_classes, prior_scale=3.0)
    assert scaled.log_density(theta)[0] == pytest.approx(model.log_density(theta)[0], rel=1e-12)


def test_logistic_posterior_matches_importance_sampling_reference():
    """A skewed posterior (n = 25, binary logistic): HMC's posterior mean agrees with self-normalised
    importance sampling from a wide Student-t proposal (4e5 draws)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(25, 1))
    y = (rng.uniform(size=25) < 1 / (1 + np.exp(-(2 * X[:, 0] + 0.5)))).astype(float)
    model = iw_model(X, y, rng.uniform(0.5, 1.5, 25), task="classification", n_classes=2, prior_scale=2.0)
    draws = hmc(model.log_density, model.dim, rng=np.random.default_rng(4), n_samples=4000, n_warmup=500)
    prop = rng.standard_t(4, size=(400_000, 2)) * 1.5 + draws.theta.mean(axis=0)
    lp = np.array([model.log_density(t)[0] for t in prop[:40_000]])
    from scipy.stats import t as student

    lq = student.logpdf((prop[:40_000] - draws.theta.mean(axis=0)) / 1.5, 4).sum(axis=1)
    lw = lp - lq
    w = np.exp(lw - lw.max())
    ref = (w[:, None] * prop[:40_000]).sum(axis=0) / w.sum()
    sd = draws.theta.std(axis=0)
    assert (np.abs(draws.theta.mean(axis=0) - ref) < 0.1 * sd).all()


def test_roc_auc_matches_sklearn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 300)
    s = np.round(rng.normal(size=300) + y, 1)  # ties
    assert roc_auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    y3 = rng.integers(0, 3, 300)
    P = rng.dirichlet(np.ones(3), 300)
    assert multiclass_auc(y3, P) == pytest.approx(roc_auc_score(y3, P, multi_class="ovr"), abs=1e-12)


def test_mlp_metric_uses_the_weights_so_weighting_flips_the_ranking():
    """70% of the synthetic rows carry flipped labels: unweighted, the MLP learns the wrong rule (AUC < 0.5
    on correctly labelled test rows); weights that down-weight the flipped rows give AUC > 0.5. So two
    synthetic sets rank differently with and without weights."""
    rng = np.random.default_rng(6)
    X = rng.uniform(-1, 1, size=(1000, 2))
    truth = (X[:, 0] + X[:, 1] > 0).astype(int)
    flipped = rng.uniform(size=1000) < 0.7
    y = np.where(flipped, 1 - truth, truth)
    Xt = rng.uniform(-1, 1, size=(400, 2))
    yt = (Xt[:, 0] + Xt[:, 1] > 0).astype(int)
    w = np.where(flipped, 0.05, 1.0)
    kw = dict(task="classification", n_classes=2)
    plain = mlp_metric(X, y, np.ones(1000), Xt, yt, rng=np.random.default_rng(7), **kw)["mlp_auc"]
    weighted = mlp_metric(X, y, w, Xt, yt, rng=np.random.default_rng(7), **kw)["mlp_auc"]
    assert plain < 0.3 and weighted > 0.9
    # a small clean set with a rougher rule sits between the two, so weighting flips the ranking of
    # (flipped set, clean set)
    Xc = rng.uniform(-1, 1, size=(40, 2))
    yc = (Xc[:, 0] + 0.3 * Xc[:, 1] > 0).astype(int)  # a rougher rule
    clean = mlp_metric(Xc, yc, np.ones(40), Xt, yt, rng=np.random.default_rng(7), **kw)["mlp_auc"]
    assert plain < clean < weighted


def test_mlp_metric_regression_mse():
    rng = np.random.default_rng(8)
    X = rng.uniform(size=(500, 2))
    y = X[:, 0] ** 2 + 0.5 * X[:, 1]
    out = mlp_metric(X, y, np.ones(500), X[:100], y[:100], task="regression", n_classes=0, rng=rng)
    assert out["mlp_mse"] < 0.01


def test_pmse_is_null_for_one_distribution_and_grows_with_a_mean_shift():
    rng = np.random.default_rng(9)
    null = [pmse(rng.normal(size=(300, 3)), rng.normal(size=(200, 3))) for _ in range(300)]
    ratios = np.array([r["pmse_ratio"] for r in null])
    assert abs(ratios.mean() - 1) < 4 * ratios.std(ddof=1) / math.sqrt(ratios.size)  # E = the null expectation
    assert np.mean([r["pmse"] for r in null]) < 0.01
    values = [np.mean([pmse(rng.normal(size=(300, 3)), rng.normal(size=(200, 3)) + s)["pmse"] for _ in range(20)])
              for s in (0.0, 0.2, 0.5, 1.0)]
    assert all(a < b for a, b in zip(values, values[1:], strict=False))


def test_pmse_sees_the_importance_weights():
    """Synthetic rows from N(0,1), real from N(1,1): the true weights exp(x - 1/2) bring pMSE back to
    about its null value."""
    rng = np.random.default_rng(10)
    real, synth = rng.normal(1, 1, size=(2000, 1)), rng.normal(0, 1, size=(2000, 1))
    plain = pmse(real, synth)["pmse_ratio"]
    weighted = pmse(real, synth, np.exp(synth[:, 0] - 0.5))["pmse_ratio"]
    assert plain > 50 and weighted < 5


def test_log_weight_mse_ignores_the_constant_and_zero_weights():
    lw = np.random.default_rng(11).normal(size=50)
    assert log_weight_mse(lw, lw + 3.0) == pytest.approx(0.0, abs=1e-20)
    other = lw.copy()
    other[:5] = -np.inf
    assert log_weight_mse(lw, other) == pytest.approx(log_weight_mse(lw[5:], lw[5:]))
    assert log_weight_mse(lw, -lw) > 1


def test_figures_are_written(tmp_path):
    from dpiw.evaluate.figures import figure_bayes_boxplots, figure_toy_weights

    rng = np.random.default_rng(12)
    X = rng.uniform(size=(200, 2))
    figure_toy_weights([("none", X, np.zeros(200)), ("true", X, np.where(X.sum(1) < 1, 0.0, -np.inf))], "toy",
                       tmp_path / "f1.png")
    runs = pd.DataFrame({"dataset": "iris", "eps": 1, "post": "none", "seed": np.tile([0, 1, 2], 4),
                         "sdgp": np.repeat(["marginals", "privbayes"], 6),
                         "weights": np.tile(np.repeat(["none", "beta_debiased"], 3), 2),
                         "bayes_auc": rng.uniform(0.8, 1, 12)})
    figure_bayes_boxplots(runs, tmp_path / "f2.png")
    for f in ("f1.png", "f2.png"):
        assert (tmp_path / f).read_bytes()[:4] == b"\x89PNG"


def test_figure_2_has_no_panel_for_a_dataset_without_the_bayesian_metric(tmp_path, monkeypatch):
    """evaluation.skip_bayes (digits in the paper grid): its runs' Bayesian columns are NaN, and Figure 2 shows
    the datasets that have them, not an empty panel with a regression's axis label."""
    import dpiw.evaluate.figures as figures

    saved = []
    monkeypatch.setattr(figures, "_save", lambda fig, out: saved.append(fig))
    rng = np.random.default_rng(3)
    runs = pd.DataFrame({"dataset": np.repeat(["iris", "digits", "housing"], 6), "eps": 1, "post": "none",
                         "seed": np.tile([0, 1, 2], 6), "sdgp": "privbayes",
                         "weights": np.tile(np.repeat(["none", "beta_debiased"], 3), 3),
                         "bayes_auc": np.r_[rng.uniform(0.8, 1, 6), np.full(12, np.nan)],
                         "bayes_mse": np.r_[np.full(12, np.nan), rng.uniform(0.01, 0.05, 6)]})
    figures.figure_bayes_boxplots(runs, tmp_path / "f.png")
    titles = [ax.get_title() for ax in saved[0].axes if ax.get_title()]
    assert [t.split(",")[0] for t in titles] == ["housing", "iris"]
    labels = {t.split(",")[0]: ax.get_ylabel() for t, ax in zip(titles, [a for a in saved[0].axes if a.get_title()],
                                                                   strict=True)}
    assert labels == {"housing": "posterior predictive MSE ↓", "iris": "posterior predictive ROC-AUC ↑"}


def test_wasserstein_on_a_large_synthetic_set_is_quantised_closely(monkeypatch):
    """Above WST_MAX_SUPPORT rows the weighted synthetic measure is quantised to that many atoms: the
    distance stays within 0.01 of the exact one (here with the cap lowered to 400 of 4000 rows)."""
    from dpiw.evaluate import metrics

    rng = np.random.default_rng(3)
    X_s, X_t = rng.uniform(size=(4000, 2)), rng.uniform(size=(200, 2)) * 0.8
    w = np.exp(rng.normal(size=4000))
    exact = metrics.weighted_wasserstein(X_s, w, X_t)
    monkeypatch.setattr(metrics, "WST_MAX_SUPPORT", 400)
    approx = metrics.weighted_wasserstein(X_s, w, X_t)
    assert approx != exact and abs(approx - exact) < 0.01
    a = metrics.reduce_support(w / w.sum(), 400)
    assert np.count_nonzero(a) <= 400 and a.sum() == pytest.approx(1.0)
    assert np.abs(np.cumsum(a) - np.cumsum(w / w.sum())).max() <= 1 / 400 + 1e-12


def test_mlp_metric_caps_its_steps_on_large_sets():
    """train_mlp runs at most max_steps Adam steps (whole epochs): a 10x larger set costs no more steps."""
    from dpiw.evaluate.utility import train_mlp

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(2000, 2))
    y = (X[:, 0] > 0.5).astype(int)

    def fit(n, max_steps):
        return train_mlp(X[:n], y[:n], np.ones(n), task="classification", n_classes=2, rng=np.random.default_rng(1),
                         epochs=100, batch_size=100, max_steps=max_steps)

    assert fit(200, 10_000).steps == 200  # uncapped: 100 epochs x 2 batches
    small, big = fit(200, 50), fit(2000, 50)
    assert small.steps == 50 and big.steps == 40  # 25 epochs x 2 batches; 2 epochs x 20 batches
    assert np.mean((big(X) > 0.5) == y) > 0.8


def test_a_diverging_trajectory_is_rejected_not_an_overflow():
    """Regression with sigma sampled: far out in log sigma the density is 0 (not math.exp overflowing), and a
    sampler whose trajectories reach such a region still returns finite draws from the posterior."""
    from dpiw.evaluate.bayes import LOG_SIGMA_LIMIT, hmc, iw_model

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(50, 2))
    y = X @ [0.3, -0.2] + 0.5 + 0.05 * rng.standard_normal(50)
    model = iw_model(X, y, np.ones(50), task="regression")
    theta = np.zeros(model.dim)
    for log_sigma in (-1000.0, 1000.0, LOG_SIGMA_LIMIT + 1):
        theta[-1] = log_sigma
        lp, g = model.log_density(theta)
        assert lp == -math.inf and np.all(g == 0)

    def cliff(t):  # the posterior with a wall: every trajectory that crosses t[0] > 0.5 diverges
        lp, g = model.log_density(t)
        return (-math.inf, np.zeros_like(t)) if t[0] > 0.5 else (lp, g)

    draws = hmc(cliff, model.dim, rng=np.random.default_rng(1), n_samples=200, n_warmup=100)
    assert np.isfinite(draws.theta).all() and (draws.theta[:, 0] <= 0.5).all() and draws.accept_rate > 0.3


def test_tables_never_bold_an_oracle_or_a_non_dp_row():
    """The oracle `true` weights and the non-private `logreg`/`mlp` win every metric here; the bold goes to the DP
    method a curator could release that beats its matched control (beta_debiased, against unit weights on its own
    split-share rows), and the others are marked § and †."""
    import pandas as pd

    from dpiw.evaluate.aggregate import long_table, markdown

    rows = []
    rng = np.random.default_rng(0)
    for seed in range(4):
        for w, wst, dp in (("true", 0.1, True), ("logreg", 0.2, False), ("mlp", 0.15, False),
                           ("beta_debiased", 0.5, True), ("beta_noised", 0.9, True), ("none", 0.9, True),
                           ("none_split", 0.9, True)):
            rows.append({"dataset": "toy", "eps": "1", "seed": seed, "sdgp": "uniform", "weights": w,
                         "post": "none", "dp": dp, "fit_to_release": True, "wst": wst + 0.01 * rng.normal()})
    text = markdown(long_table(rows), runs=pd.DataFrame(rows))
    wst = {line.split("|")[2].strip(): line.split("|")[3].strip() for line in text.splitlines()
           if line.startswith("| WST")}
    assert wst["beta_debiased"].startswith("**") and wst["true"].endswith("§") and wst["logreg"].endswith("†")
    # beta_noised equals its control: not bold
    assert not any(wst[w].startswith("**") for w in ("true", "logreg", "mlp", "none", "none_split", "beta_noised"))


def test_summary_tests_every_dp_method_against_its_matched_control():
    """Every DP weight method is listed with its paired change against its matched control and against None on the
    whole epsilon (Holm over the cell's methods); `true` (the oracle) and the non-DP references are better here
    on purpose and are never listed; a method failing the k-hat gate is listed and marked."""
    import pandas as pd

    from dpiw.evaluate import summary_table

    rows = []
    rng = np.random.default_rng(1)
    for seed in range(6):
        for weights, wst, dp, fit in (("none", 0.50, True, True), ("none_split", 0.60, True, True),
                                      ("true", 0.01, True, True), ("logreg", 0.02, False, True),
                                      ("mlp", 0.03, False, True), ("dp_mlp", 0.60, True, False),
                                      ("beta_debiased", 0.55, True, True), ("beta_noised", 0.45, True, True)):
            rows.append({"dataset": "toy", "eps": "1", "sdgp": "uniform", "post": "none", "seed": seed,
                         "weights": weights, "wst": wst + 0.002 * rng.normal(), "dp": dp, "fit_to_release": fit})
        for weights, wst in (("none", 0.5), ("discriminator", 0.3)):  # a non-private SDGP: a reference only
            rows.append({"dataset": "toy", "eps": "1", "sdgp": "gan", "post": "none", "seed": seed,
                         "weights": weights, "wst": wst + 0.002 * rng.normal(), "dp": False, "fit_to_release": True})
    table = summary_table.summary_rows(pd.DataFrame(rows))
    assert set(table.sdgp) == {"uniform"}
    table = table.set_index("weights")
    assert set(table.index) == {"beta_noised", "beta_debiased", "dp_mlp"}
    assert (table.control == "none_split").all()
    # beta_debiased beats its own rows' unit weights but not None on the whole epsilon: it is worse than that
    assert table.loc["beta_debiased", "vs_matched_verdict"] == "better"
    assert table.loc["beta_debiased", "vs_none_verdict"] == "worse"
    assert table.loc["beta_debiased", "vs_matched_change"] == pytest.approx(-0.05, abs=0.005)
    assert table.loc["beta_noised", "vs_none_verdict"] == "better"
    assert table.loc["dp_mlp", "vs_matched_verdict"] == "no clear difference"
    text = summary_table.markdown(table.reset_index())
    assert "**beta_debiased**" in text and "**beta_noised**" in text and "| dp_mlp ‡ |" in text
    assert "some DP weight method was clearly better in 1 of 1 cells (dataset, ε, generator) and clearly worse in 0" \
        in text
    for name in ("true", "logreg", "mlp"):
        assert f"| {name} |" not in text and f"**{name}**" not in text


def test_summary_keeps_the_none_rows_own_standard_error():
    """The None row's SE (over seeds) and a method's paired SE against None are different numbers, both kept."""
    import pandas as pd

    from dpiw.evaluate import summary_table

    rows = [{"dataset": "toy", "eps": "1", "sdgp": "uniform", "post": "none", "seed": s, "weights": w,
             "wst": v + (0.1 * s if w == "none" else 0.1 * s + 0.001 * (-1) ** s), "dp": True, "fit_to_release": True}
            for s in range(4) for w, v in (("none", 0.5), ("discriminator", 0.4))]
    r = summary_table.summary_rows(pd.DataFrame(rows)).iloc[0]
    assert r.none_se == pytest.approx(pd.Series([0.5, 0.6, 0.7, 0.8]).std() / 2)
    assert r.vs_none_se < 0.01 < r.none_se


def test_the_report_gives_one_privacy_line_per_kind_of_run_and_folds_the_runs():
    """30 benchmark runs that differ only in their own numbers are one kind: one line, the runs folded."""
    import re

    from dpiw.evaluate.report_pages import FOLD_ROWS, manifests_html

    def manifest(i):
        eps = 0.9 + i / 1000
        return {"run": f"toy/eps=1/seed={i}/mst/none/none", "dp": True, "neighbours": {"relation": "replace_one"},
                "budget": {"epsilon": 1.0}, "spent": {"epsilon": eps, "tightest": {"epsilon": eps, "delta": 1e-5}},
                "verdict": f"within budget (RDP composition: epsilon={eps} at delta=1e-05)",
                "release": {"fit_to_release": False, "reasons": ["benchmark mode (public noise seeds)",
                                                                 f"k-hat {0.5 + i / 100:.2f} above 0.7"]},
                "records": [{"stage": "synthesize", "dp": True, "epsilon": eps, "delta": 1e-5, "mechanism": "MST"}]}

    page = manifests_html([manifest(i) for i in range(30)])
    kinds = re.search(r'<table id="kinds">.*?</table>', page, re.S).group(0)
    assert kinds.count("<tr><td") == 1 and "0.9 to 0.929" in kinds
    assert 30 > FOLD_ROWS and re.search(r'<details><summary>every run[^<]*\(30 rows\)</summary><table id="manifests"',
                                        page)
