"""Density-ratio (importance weight) estimators: log w(x) = log p_D(x)/p_G(x) at the synthetic rows.

Classifier route (docs/method.md): with p = P(y=1 | x) for real (y=1) versus synthetic (y=0) rows,
log w(x) = logit p(x) + log(N_G/N_D): a balanced classifier with N_D = N_G gives no shift.

Every estimator takes ``fit(X_real, X_synth, *, epsilon, delta, rng, rows=None)`` on encoded records in
[0, 1]^p (no intercept), sets ``privacy_`` and answers ``log_ratio(X)``. ``rows`` (dpiw.privacy.neighbours.RowCount)
is the row count N_D as the mechanism may use it: the exact N_D under replace-one neighbours (the default),
a noisy count under add/remove, where N_D is private (then N_D in the prior odds, the objective's divisor
and the sensitivities is that count).
"""

from __future__ import annotations

import math

import numpy as np

from dpiw import DpiwError
from dpiw._docs import WEIGHTS_FIT, WEIGHTS_LOG_RATIO, shared_doc
from dpiw.privacy.neighbours import RowCount, changed_terms
from dpiw.privacy.spend import PrivacySpend, no_spend
from dpiw.weights.logistic import add_intercept, fit_l2_logistic, l1_sensitivity, l2_sensitivity

SENSITIVITY_N = ("private", "total")
#: the public rules that choose lambda (weights.beta.lambda, besides a number)
LAMBDA_RULES = ("auto", "rate")
#: how the coefficients' noise scale is set: dpiw's (R from the public bounds) or the paper's (R = 1: NOT DP)
NOISE_RULES = ("dpiw", "paper")


def log_prior_odds(n_real: int, n_synth: int) -> float:
    """log(N_G / N_D), added to the classifier's logit."""
    return math.log(n_synth / n_real)


def laplace_bias_correction(X_tilde: np.ndarray, rho: float) -> np.ndarray:
    """log b(x) = sum_j log(1 - rho^2 x_j^2), where b(x) = 1 / E[exp(zeta^T x)], zeta_j ~ Laplace(0, rho)
    iid (Proposition 2; the Laplace mgf is 1/(1 - rho^2 t^2) for |t| < 1/rho).

    >>> float(np.exp(laplace_bias_correction(np.array([[0.5, 1.0]]), 0.5))[0])
    0.703125
    """
    a = np.abs(X_tilde).max()
    if rho * a >= 1:
        raise DpiwError(
            f"BetaDebiased (Laplace): the bias correction needs |x_j| < 1/rho for every coordinate, but "
            f"rho={rho:.4g} and max|x_j|={a:.4g} (the intercept alone needs rho < 1). Raise "
            "weights.beta.lambda or the run's epsilon, raise privacy.weights_epsilon_fraction, or use "
            "beta_debiased_gauss (Gaussian noise, always defined)")
    return np.log1p(-(rho * X_tilde) ** 2).sum(axis=1)


class NoWeights:
    """w = 1."""

    @shared_doc(WEIGHTS_FIT)
    def fit(self, X_real, X_synth, *, epsilon, delta, rng, rows=None):
        self.privacy_ = no_spend("fit_weights", basis="no weights: reads nothing", method="none")
        return self

    @shared_doc(WEIGHTS_LOG_RATIO)
    def log_ratio(self, X):
        return np.zeros(X.shape[0])


class SplitControl(NoWeights):
    """w = 1 on the rows of the SDGP fitted on the split share: the paired control of the methods that take a
    weight budget (their synthetic rows come from an SDGP with less epsilon than `none`'s). Spends nothing."""

    @shared_doc(WEIGHTS_FIT)
    def fit(self, X_real, X_synth, *, epsilon, delta, rng, rows=None):
        self.privacy_ = no_spend("fit_weights", basis="no weights: reads nothing (the weight share is left unspent)",
                                 method="none_split")
        return self


class TrueToyWeights:
    """The analytic ratio for the toy data with the uniform SDGP: w = 2 * 1[x1 + x2 < 1]."""

    @shared_doc(WEIGHTS_FIT)
    def fit(self, X_real, X_synth, *, epsilon, delta, rng, rows=None):
        self.privacy_ = no_spend("fit_weights", basis="analytic density ratio of the known toy DGP and the "
                                 "data-free uniform SDGP; reads no data", method="true")
        return self

    @shared_doc(WEIGHTS_LOG_RATIO)
    def log_ratio(self, X):
        inside = X[:, 0] + X[:, 1] < 1
        return np.where(inside, math.log(2.0), -np.inf)


def auto_lambda(*, norm_bound: float, n: int, n_coef: int, epsilon: float, rho_target: float,
                terms: int = 2) -> float:
    """The smallest lambda whose Laplace scale rho = sqrt(p) terms R/(n lambda epsilon) equals ``rho_target``
    (terms: 2 under replace-one neighbours, 1 under add/remove).

    It depends only on public quantities (n: N_D under replace-one, the noisy count under add/remove; p, R,
    epsilon), so choosing it costs no budget. With rho_target < 1 the BetaDebiased correction always exists
    on [0, 1]^p.

    >>> round(auto_lambda(norm_bound=3 ** 0.5, n=1000, n_coef=3, epsilon=0.1, rho_target=0.5), 6)
    0.12
    """
    return math.sqrt(n_coef) * terms * norm_bound / (n * epsilon * rho_target)


#: lambda 'rate': the public assumptions of its error bound (:func:`rate_lambda`): the logistic loss's curvature at
#: balanced classes, and a bound on the norm of the true coefficients
RATE_CURVATURE, RATE_COEF_NORM = 0.25, 1.0
#: lambda 'rate''s cap on the noise scale where the data are too few for the bound: inside the Laplace weights'
#: finite-variance limit (rho < 1/2, :data:`LAPLACE_RHO_LIMIT`) with a margin (E[w^2] at most 1/(1 - 4 rho^2) =
#: 2.8 times the noiseless one at the intercept)
RATE_RHO_MAX = 0.4


def rate_lambda(*, auto: float, rho_target: float, variance_factor: float, rho_max: float = RATE_RHO_MAX) -> float:
    """lambda 'rate': noise that shrinks with the data, never above ``rho_max``.

    Every coefficient's noise scale is K / lambda with K = rho_target * auto (public: N_D or the noisy count, p,
    R, epsilon; K falls like 1/(N eps)). The log weight's error at x~ (||x~|| <= R) is bounded by
    R^2 [(lambda b / kappa)^2 + v K^2 / lambda^2]: the L2 penalty's bias on the coefficients (at most
    lambda ||beta*|| / kappa for a loss of curvature kappa; b = RATE_COEF_NORM bounds ||beta*||, kappa =
    RATE_CURVATURE) and the noise's variance (v = 2 for Laplace, 1 for Gaussian noise of that scale). The
    bound's minimiser is lambda* = sqrt(sqrt(v) K kappa / b), so the noise scale sqrt(K b / (sqrt(v) kappa)) falls
    like 1/sqrt(N eps) and the weights converge to the non-private ones. lambda 'rate' is max(K / rho_max,
    lambda*): where the data are too few for the bound, the noise stops at ``rho_max`` (finite-variance weights),
    not at lambda 'auto''s rho_target, so it falls like 1/sqrt(N eps) from as few rows as it can.

    >>> round(rate_lambda(auto=2.0, rho_target=0.3, variance_factor=2.0), 12)  # few rows: the cap binds (noise 0.4)
    1.5
    >>> lam = rate_lambda(auto=2e-4, rho_target=0.3, variance_factor=2.0)  # many rows: noise below the cap
    >>> round(0.3 * 2e-4 / lam, 4), round((0.3 * 2e-4 * 1.0 / (2 ** 0.5 * 0.25)) ** 0.5, 4)  # = sqrt(K b/(sqrt(v) k))
    (0.013, 0.013)
    """
    k = rho_target * auto
    return max(k / rho_max, math.sqrt(math.sqrt(variance_factor) * k * RATE_CURVATURE / RATE_COEF_NORM))


def design(X_real: np.ndarray, X_synth: np.ndarray) -> np.ndarray:
    """[[X_real, 1], [X_synth, 1]] written once into one array (no stacked copy, then an intercept copy)."""
    n_real, (n_synth, p) = len(X_real), np.shape(X_synth)
    X = np.empty((n_real + n_synth, p + 1))
    X[:n_real, :p] = X_real
    X[n_real:, :p] = X_synth
    X[:, p] = 1.0
    return X


#: BetaNoised/BetaDebiased weights have E[w^2] proportional to prod_j 1/(1 - 4 rho^2 x~_j^2): finite only for
#: rho max|x~_j| < 1/2, and the intercept coordinate is 1 (bench/rho_target.py chose the default below it)
LAPLACE_RHO_LIMIT = 0.5


class LogReg:
    """L2 logistic regression on D and G: the non-private baseline, and the fit BetaNoised/BetaDebiased privatise.

    Parameters
    ----------
    lam : float, "auto" or "rate"
        The penalty lambda of (1/n) sum_i loss_i + (lambda/2) ||beta||^2 (intercept penalised too). "auto":
        :func:`auto_lambda`, the lambda whose DP noise scale is ``rho_target`` (the private methods), so the
        noise never shrinks with N. "rate": :func:`rate_lambda`, noise that falls like 1/sqrt(N eps) below a cap
        of :data:`RATE_RHO_MAX`.
    sensitivity_n : {"private", "total"}
        The n of the sensitivity 2R/(n lambda) (private methods).
    rho_target : float
        The Laplace scale (BetaNoised, BetaDebiased; below 1/2) or the Gaussian std (beta_debiased_gauss) that
        lambda "auto" aims at.
    C : float, optional
        The non-private baseline's own regularisation, as scikit-learn's ``LogisticRegression(C=C)``:
        lambda = 1 / (C (N_D + N_G)). When given, ``lam`` is not used: the baseline is the reference for what
        logistic weights can do, not a DP method without its noise.
    noise_rule : {"dpiw", "paper"}
        "dpiw": the noise scale from R = max ||x~||_2 over the public bounds (correct). "paper": the paper's
        rho = 2 sqrt(p) / (n lambda epsilon), i.e. R = 1 although the rows are not normalised: under-noised by
        about sqrt(p), NOT DP (the paper-accounting ablation; the stage marks its record so).
    """

    method = "logreg"
    #: the variance of the coefficient noise in units of its scale squared (Laplace: 2 b^2)
    noise_variance_factor = 2.0

    def __init__(self, *, lam: float | str = "auto", sensitivity_n: str = "private", rho_target: float = 0.3,
                 C: float | None = None, noise_rule: str = "dpiw"):
        if noise_rule not in NOISE_RULES:
            raise DpiwError(f"the logistic weights' noise rule must be one of {NOISE_RULES}, got {noise_rule!r}")
        self.noise_rule = noise_rule
        self.lam = lam
        self.sensitivity_n = sensitivity_n
        self.rho_target = rho_target
        self.C = C

    def _auto_lambda(self, *, n_coef: int, epsilon: float, delta: float, n_out: int) -> float:
        """lambda 'auto': the smallest lambda whose noise scale meets ``rho_target`` (public numbers only)."""
        return auto_lambda(norm_bound=self.norm_bound_, n=self.n_sens_, n_coef=n_coef, epsilon=epsilon,
                           rho_target=self.rho_target, terms=self.terms_)

    def _fit_beta(self, X_real, X_synth, *, epsilon: float, norm_bound: float | None, delta: float = 0.0,
                  rows: RowCount | None = None):
        if self.sensitivity_n not in SENSITIVITY_N:
            raise DpiwError(f"weights.beta.sensitivity_n must be one of {SENSITIVITY_N}, got {self.sensitivity_n!r}")
        X = design(X_real, X_synth)
        y = np.r_[np.ones(len(X_real)), np.zeros(len(X_synth))]
        self.rows_ = rows or RowCount.exact(len(X_real))
        self.terms_ = changed_terms(self.rows_.neighbours)
        self.n_real_, self.n_synth_ = self.rows_.n, len(X_synth)  # N_D: public, or the noisy count
        p = X.shape[1]
        # R over x~ = (x, 1): the caller passes the public bound of ||x||; the intercept adds 1.
        bound_x = norm_bound if norm_bound is not None else math.sqrt(p - 1)
        self.norm_bound_ = math.sqrt(bound_x**2 + 1.0) if self.noise_rule == "dpiw" else 1.0
        self.n_sens_ = self.n_real_ if self.sensitivity_n == "private" else self.n_real_ + self.n_synth_
        if self.C is not None:
            if not (isinstance(self.C, int | float) and self.C > 0 and math.isfinite(self.C)):
                raise DpiwError(f"weights.logreg.C must be a number > 0, got {self.C!r}")
            self.lambda_ = 1.0 / (float(self.C) * len(X))
        elif self.lam in LAMBDA_RULES:
            if not (0 < self.rho_target < 1):
                raise DpiwError(f"weights.beta.rho_target must be in (0, 1), got {self.rho_target}")
            if getattr(self, "laplace_noise", False) and self.rho_target >= LAPLACE_RHO_LIMIT:
                raise DpiwError(f"weights.beta.rho_target = {self.rho_target:g} gives {self.method} weights of "
                                f"infinite variance (E[w^2] grows like 1/(1 - 4 rho^2) for the intercept); "
                                f"set it below {LAPLACE_RHO_LIMIT:g} (default 0.3)")
            if not (epsilon > 0):
                raise DpiwError("weights.beta.lambda 'auto' needs the weight budget epsilon > 0")
            self.lambda_ = self._auto_lambda(n_coef=p, epsilon=epsilon, delta=delta, n_out=len(X_synth))
            if self.lam == "rate":
                self.lambda_ = rate_lambda(auto=self.lambda_, rho_target=self.rho_target,
                                           variance_factor=self.noise_variance_factor)
        else:
            try:
                self.lambda_ = float(self.lam)
            except (TypeError, ValueError):
                raise DpiwError(f"weights.beta.lambda must be 'auto', 'rate' or a positive number, got "
                                f"{self.lam!r}") from None
            if not (self.lambda_ > 0 and math.isfinite(self.lambda_)):
                raise DpiwError(f"weights.beta.lambda must be 'auto', 'rate' or a positive number, got {self.lam!r}")
        # the objective's divisor must be public: len(X) under replace-one; under add/remove the noisy
        # N~ + N_G, i.e. (1/(N~ + N_G)) sum loss + lambda/2 ||beta||^2 = the solver's objective at this lambda
        lam_fit = self.lambda_ * (self.n_real_ + self.n_synth_) / len(X) if self.rows_.noisy else self.lambda_
        self.coef_ = fit_l2_logistic(X, y, lam=lam_fit)
        self.log_prior_odds_ = log_prior_odds(self.n_real_, self.n_synth_)

    @shared_doc(WEIGHTS_FIT)
    def fit(self, X_real, X_synth, *, epsilon, delta, rng, norm_bound: float | None = None, rows=None):
        self._fit_beta(X_real, X_synth, epsilon=epsilon, norm_bound=norm_bound, rows=rows)
        rule = f"1/(C n), C = {self.C:g}, n = N_D + N_G" if self.C is not None else str(self.lam)
        self.privacy_ = PrivacySpend(
            stage="fit_weights", mechanism="none (non-private logistic regression)", epsilon=None, delta=None,
            dp=False, reads_private=("train",), basis="non-private baseline: coefficients fitted on the "
            "private rows without noise", details={"method": self.method, "lambda": self.lambda_,
                                                   "lambda_rule": rule})
        return self

    @shared_doc(WEIGHTS_LOG_RATIO)
    def log_ratio(self, X):
        return add_intercept(X) @ self.coef_ + self.log_prior_odds_


#: the signal check's margin: a noisy coefficient vector carries signal when its squared norm exceeds what the
#: noise alone gives on average by this many of its standard deviations
SIGNAL_Z = 2.0


def laplace_signal(noisy_coef: np.ndarray, scale: float) -> dict:
    """Do the noisy coefficients carry more than their Laplace(scale) noise? (post-processing: the public noise
    law). Under "no signal" (true coefficients 0) ||c||^2 has mean 2 p b^2 and variance 20 p b^4 (E z^4 = 24 b^4);
    the check fires past the mean plus ``SIGNAL_Z`` standard deviations.

    >>> laplace_signal(np.array([3.0, 0.1]), 0.3)["signal"], laplace_signal(np.array([0.2, -0.3]), 0.3)["signal"]
    (True, False)
    """
    p = noisy_coef.size
    stat, mean, sd = float(noisy_coef @ noisy_coef), 2 * p * scale**2, math.sqrt(20 * p) * scale**2
    return {"signal": bool(stat > mean + SIGNAL_Z * sd), "norm2": stat, "noise_mean": mean, "noise_sd": sd,
            "rule": f"signal if ||coefficients||^2 > 2 p b^2 + {SIGNAL_Z:g} sqrt(20 p) b^2 (Laplace scale b)"}


class BetaNoised(LogReg):
    """Ji & Elkan (2013): Laplace noise on the coefficients, with the L1 sensitivity done right.

    rho = Delta_1 / epsilon with Delta_1 = sqrt(p) * 2R/(n lambda), R = max ||x~||_2 from the public
    bounds (intercept included), p the number of coefficients, n = N_D ("private", conservative, the
    paper's) or N_D + N_G ("total", the objective's own divisor).
    """

    method = "beta_noised"
    laplace_noise = True

    @shared_doc(WEIGHTS_FIT)
    def fit(self, X_real, X_synth, *, epsilon, delta, rng, norm_bound: float | None = None, rows=None):
        if not (epsilon > 0):
            raise DpiwError(f"{self.method} needs a positive weight budget epsilon, got {epsilon}")
        self._fit_beta(X_real, X_synth, epsilon=epsilon, norm_bound=norm_bound, rows=rows)
        p, R, n = self.coef_.size, self.norm_bound_, self.n_sens_
        d2 = l2_sensitivity(norm_bound=R, n=n, lam=self.lambda_, terms=self.terms_)
        d1 = l1_sensitivity(norm_bound=R, n=n, lam=self.lambda_, n_coef=p, terms=self.terms_)
        self.rho_ = d1 / epsilon
        self.finite_variance_ = self.rho_ < LAPLACE_RHO_LIMIT  # max |x~_j| = 1 (the intercept)
        self.noise_ = rng.laplace(0.0, self.rho_, size=p)
        self.noisy_coef_ = self.coef_ + self.noise_
        self.privacy_ = PrivacySpend(
            stage="fit_weights", mechanism="laplace output perturbation of L2 logistic regression",
            epsilon=float(epsilon), delta=0.0,
            sensitivity={"l2": d2, "l1": d1, "norm_bound_R": R, "n": n, "n_coef": p, "lambda": self.lambda_,
                         "lambda_rule": str(self.lam), "changed_loss_terms": self.terms_,
                         "reference": "Chaudhuri et al. 2011, Cor. 8; L1 <= sqrt(p) L2",
                         "noise_rule": self.noise_rule if self.noise_rule == "dpiw" else
                         "paper: rho = 2 sqrt(p)/(n lambda eps), R = 1 assumed (NOT DP here)"},
            noise={"distribution": "laplace", "scale": self.rho_, "coordinates": p},
            accountant="closed form (pure epsilon-DP)", reads_private=("train",), neighbours=self.rows_.neighbours,
            details={"method": self.method, "unused_delta": float(delta),
                     "weights_finite_variance": bool(self.finite_variance_),
                     # the intercept (last) only shifts every log weight: self-normalised, it cancels
                     "signal": laplace_signal(self.noisy_coef_[:-1], self.rho_)},
            rdp=({"kind": "laplace", "epsilon": float(epsilon), "about": "L1 over the coefficients"},))
        return self

    @shared_doc(WEIGHTS_LOG_RATIO)
    def log_ratio(self, X):
        return add_intercept(X) @ self.noisy_coef_ + self.log_prior_odds_


class BetaDebiased(BetaNoised):
    """Proposition 2: w*(x) = exp(beta-bar^T x~) b(x~), b = 1/E[exp(zeta^T x~)] = prod_j (1 - rho^2 x~_j^2).

    Same budget and the same noisy coefficients as BetaNoised (b uses only public x~ and the public
    noise law), but the IS estimator becomes unbiased.
    """

    method = "beta_debiased"

    @shared_doc(WEIGHTS_LOG_RATIO)
    def log_ratio(self, X):
        Xt = add_intercept(X)
        return Xt @ self.noisy_coef_ + laplace_bias_correction(Xt, self.rho_) + self.log_prior_odds_


def make_estimator(method: str, **params):
    """The estimator of a weight method that fits on rows (not the GAN-based ones: make_gan_weights)."""
    from dpiw import registry

    entry = registry.weight_method(method)
    if entry.family == "gan":
        raise DpiwError(f"weight method {method!r} uses a GAN's networks: dpiw.weights.gan_weights.make_gan_weights")
    try:
        return registry.load(entry.estimator)(**params)
    except TypeError as exc:
        raise DpiwError(f"weight method {method!r}: bad parameters {sorted(params)} ({exc})") from exc
