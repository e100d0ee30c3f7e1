"""Gaussian BetaDebiased (Supplement B.2.2) and output perturbation of the log weights (Supplement A.1,
Corollaries 1 and 2), both on the L2 logistic regression of :class:`dpiw.weights.estimators.LogReg`.

Sensitivities (replace-one, ||x~||_2 <= R from the public schema, intercept included, n = N_D by default;
under add/remove neighbours every 2 below is 1 and n is the noisy count, dpiw.privacy.neighbours):

- coefficients: ||beta(D) - beta(D')||_2 <= 2R/(n lambda) (Chaudhuri et al. 2011);
- one log weight beta^T x~: |(beta - beta')^T x~| <= 2R^2/(n lambda);
- the vector of the N_S released log weights: L1 <= N_S 2R^2/(n lambda), L2 <= sqrt(N_S) 2R^2/(n lambda).
  So the noise grows with the number of released weights N_S (the paper's "(N_S eps, 0)").

Gaussian mechanism: the analytic Gaussian mechanism (Balle and Wang 2018; dpiw.privacy.mechanisms), the smallest s
for which N(0, s^2) noise on a query of L2 sensitivity Delta_2 is (eps, delta)-DP, for any eps > 0 (the
classical s = Delta_2 sqrt(2 ln(1.25/delta)) / eps needs eps < 1 and is larger).
"""

from __future__ import annotations

import math

import numpy as np

from dpiw import DpiwError
from dpiw._docs import WEIGHTS_FIT, WEIGHTS_LOG_RATIO, shared_doc
from dpiw.privacy.mechanisms import analytic_gaussian_sigma
from dpiw.privacy.spend import PrivacySpend
from dpiw.weights.estimators import LogReg
from dpiw.weights.logistic import add_intercept, l2_sensitivity


def gaussian_scale(sensitivity_l2: float, epsilon: float, delta: float) -> float:
    """Noise sd of the analytic Gaussian mechanism (any epsilon > 0, 0 < delta < 1)."""
    return analytic_gaussian_sigma(epsilon, delta, sensitivity_l2)


def gaussian_log_correction(X_tilde: np.ndarray, s: float) -> np.ndarray:
    """log b(x) = -s^2 ||x~||^2 / 2, b = 1/E[exp(zeta^T x~)] for zeta ~ N(0, s^2 I).

    >>> float(np.exp(gaussian_log_correction(np.array([[1.0, 1.0]]), 0.5))[0]) == float(np.exp(-0.25))
    True
    """
    return -0.5 * s**2 * (X_tilde**2).sum(axis=1)


class BetaDebiasedGauss(LogReg):
    """beta-bar = beta + zeta, zeta ~ N(0, s^2 I) (Gaussian mechanism on the coefficients), weights
    exp(beta-bar^T x~) b(x~) with b = exp(-s^2 ||x~||^2 / 2): unbiased for every x (no |x_j| < 1/rho limit).
    lambda 'auto' makes s = rho_target."""

    method = "beta_debiased_gauss"
    noise_variance_factor = 1.0

    def _auto_lambda(self, *, n_coef, epsilon, delta, n_out):
        unit = gaussian_scale(1.0, epsilon, delta)  # s = unit * terms R/(n lambda)
        return unit * self.terms_ * self.norm_bound_ / (self.n_sens_ * self.rho_target)

    @shared_doc(WEIGHTS_FIT)
    def fit(self, X_real, X_synth, *, epsilon, delta, rng, norm_bound: float | None = None, rows=None):
        if not (epsilon > 0):
            raise DpiwError(f"{self.method} needs a positive weight budget epsilon, got {epsilon}")
        self._fit_beta(X_real, X_synth, epsilon=epsilon, norm_bound=norm_bound, delta=delta, rows=rows)
        p, R, n = self.coef_.size, self.norm_bound_, self.n_sens_
        d2 = l2_sensitivity(norm_bound=R, n=n, lam=self.lambda_, terms=self.terms_)
        self.s_ = gaussian_scale(d2, epsilon, delta)
        self.noisy_coef_ = self.coef_ + rng.normal(0.0, self.s_, size=p)
        self.privacy_ = PrivacySpend(
            stage="fit_weights", mechanism="gaussian output perturbation of L2 logistic regression",
            epsilon=float(epsilon), delta=float(delta),
            sensitivity={"l2": d2, "norm_bound_R": R, "n": n, "n_coef": p, "lambda": self.lambda_,
                         "lambda_rule": str(self.lam)}, neighbours=self.rows_.neighbours,
            noise={"distribution": "gaussian", "std": self.s_, "coordinates": p},
            accountant="classical Gaussian mechanism (Dwork & Roth Thm A.1)", reads_private=("train",),
            details={"method": self.method, "correction": "b(x) = exp(-s^2 ||x~||^2 / 2)"},
            rdp=({"kind": "gaussian", "noise_multiplier": self.s_ / d2},))
        return self

    @shared_doc(WEIGHTS_LOG_RATIO)
    def log_ratio(self, X):
        Xt = add_intercept(X)
        return Xt @ self.noisy_coef_ + gaussian_log_correction(Xt, self.s_) + self.log_prior_odds_


class _OutputPerturbed(LogReg):
    """log w_i = beta^T x~_i + log(N_G/N_D) + eta_i with E[exp(eta)] = 1 (unbiased IS).

    The noise is drawn when :meth:`fit` sees the synthetic rows: the released weights are exactly those
    N_S = N_G rows' (``log_ratio`` refuses other rows). lambda 'auto' makes the noise scale equal to
    ``rho_target`` (the Laplace scale b, or the Gaussian std s).
    """

    distribution = ""

    def _per_weight(self, lam: float) -> float:
        return self.terms_ * self.norm_bound_**2 / (self.n_sens_ * lam)

    @shared_doc(WEIGHTS_FIT)
    def fit(self, X_real, X_synth, *, epsilon, delta, rng, norm_bound: float | None = None, rows=None):
        if not (epsilon > 0):
            raise DpiwError(f"{self.method} needs a positive weight budget epsilon, got {epsilon}")
        self._fit_beta(X_real, X_synth, epsilon=epsilon, norm_bound=norm_bound, delta=delta, rows=rows)
        n_s = len(X_synth)
        self.scale_, sens = self._scale(n_s, epsilon, delta)
        self.eta_ = self._draw(rng, n_s)
        self.X_released_ = np.asarray(X_synth)
        self.privacy_ = PrivacySpend(
            stage="fit_weights", mechanism=f"{self.distribution} output perturbation of the {n_s} log weights",
            epsilon=float(epsilon), delta=float(delta) if self.distribution == "gaussian" else 0.0,
            sensitivity={**sens, "per_weight": self._per_weight(self.lambda_), "n_released": n_s,
                         "norm_bound_R": self.norm_bound_, "n": self.n_sens_, "lambda": self.lambda_,
                         "lambda_rule": str(self.lam)}, neighbours=self.rows_.neighbours,
            noise={"distribution": self.distribution, "scale": self.scale_, "per_weight": True,
                   "mean_shift": "E[exp(eta)] = 1"},
            accountant=("closed form (pure epsilon-DP, L1 over the N_S weights)" if self.distribution == "laplace"
                        else "classical Gaussian mechanism, L2 over the N_S weights"),
            reads_private=("train",), details={"method": self.method},
            rdp=(self._rdp_event(sens, epsilon),))
        return self

    @shared_doc(WEIGHTS_LOG_RATIO)
    def log_ratio(self, X):
        X = np.asarray(X)
        if X.shape != self.X_released_.shape or not np.array_equal(X, self.X_released_):
            raise DpiwError(f"{self.method}: noise is calibrated to the {len(self.X_released_)} synthetic rows it "
                            "was fitted with; other rows would need more budget")
        return add_intercept(X) @ self.coef_ + self.log_prior_odds_ + self.eta_


class OutputLaplace(_OutputPerturbed):
    """Corollary 1: eta ~ Laplace(log(1 - b^2), b), b = N_S 2R^2/(n lambda eps); b < 1/2 required
    (b < 1 for a finite mean, b < 1/2 for a finite variance)."""

    method = "output_laplace"
    distribution = "laplace"

    def _auto_lambda(self, *, n_coef, epsilon, delta, n_out):
        if not (0 < self.rho_target < 0.5):
            raise DpiwError(f"output_laplace with lambda 'auto' needs weights.beta.rho_target in (0, 0.5), got "
                            f"{self.rho_target} (the log-Laplace weights have infinite variance for b >= 1/2)")
        return n_out * self.terms_ * self.norm_bound_**2 / (self.n_sens_ * epsilon * self.rho_target)

    def _scale(self, n_s, epsilon, delta):
        l1 = n_s * self._per_weight(self.lambda_)
        b = l1 / epsilon
        if b >= 0.5:
            raise DpiwError(f"output_laplace: Laplace scale b = {b:.4g} >= 1/2 (N_S = {n_s} weights): the weights "
                            f"would have {'no finite mean' if b >= 1 else 'infinite variance'}. Raise "
                            "weights.beta.lambda (or use 'auto'), the budget, or use fewer synthetic rows")
        return b, {"l1_vector": l1}

    def _rdp_event(self, sens, epsilon):
        return {"kind": "laplace", "epsilon": float(epsilon), "about": "L1 over the N_S log weights"}

    def _draw(self, rng, n):
        b = self.scale_
        return rng.laplace(math.log1p(-b * b), b, size=n)


class OutputGauss(_OutputPerturbed):
    """Corollary 2: eta ~ N(-s^2/2, s^2), s from the Gaussian mechanism on the N_S-vector (L2 sensitivity
    sqrt(N_S) 2R^2/(n lambda))."""

    method = "output_gauss"
    distribution = "gaussian"

    def _auto_lambda(self, *, n_coef, epsilon, delta, n_out):
        unit = gaussian_scale(1.0, epsilon, delta)
        return unit * math.sqrt(n_out) * self.terms_ * self.norm_bound_**2 / (self.n_sens_ * self.rho_target)

    def _scale(self, n_s, epsilon, delta):
        l2 = math.sqrt(n_s) * self._per_weight(self.lambda_)
        return gaussian_scale(l2, epsilon, delta), {"l2_vector": l2}

    def _rdp_event(self, sens, epsilon):
        return {"kind": "gaussian", "noise_multiplier": self.scale_ / sens["l2_vector"]}

    def _draw(self, rng, n):
        s = self.scale_
        return rng.normal(-0.5 * s * s, s, size=n)
