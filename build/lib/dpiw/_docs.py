"""The numpydoc text of the methods every SDGP and every weight estimator share, written once and attached
with :func:`shared_doc` (each class's own docstring says what is particular to it)."""

from __future__ import annotations

#: the parameters every mechanism's fit takes after its data
_BUDGET = """epsilon, delta : float
    This mechanism's share of the run's budget (0 for a method that spends nothing).
rng : numpy.random.Generator
    The stage's noise stream (never shared with another invocation).
"""
#: N_D as a mechanism may use it (dpiw.privacy.neighbours)
_ROWS = """rows : dpiw.privacy.neighbours.RowCount, optional
    N_D as the mechanism may use it: exact (replace-one, the default) or the stage's noisy count (add/remove).
"""

SDGP_FIT = """Fit the generator on the scaled private rows and record what it spent in ``privacy_``.

Parameters
----------
train : pandas.DataFrame
    The private rows D, scaled to [0, 1] with the schema's public bounds (categorical columns as codes).
schema : dpiw.data.schema.Schema
    The columns, their public bounds or categories, and the target.
""" + _BUDGET + _ROWS + """
Returns
-------
self
    With ``privacy_`` (a :class:`dpiw.privacy.spend.PrivacySpend`) set.
"""

SDGP_SAMPLE = """Draw synthetic rows from the fitted generator (post-processing: spends nothing).

Parameters
----------
n : int
    How many rows (N_G).
rng : numpy.random.Generator
    The sampling stream.

Returns
-------
pandas.DataFrame
    ``n`` rows with the schema's columns, on the same scaled units as the training rows.
"""

WEIGHTS_FIT = """Estimate log p_D/p_G from the real and synthetic rows, and record what it spent in ``privacy_``.

Parameters
----------
X_real, X_synth : numpy.ndarray
    The encoded private rows D and synthetic rows G (dpiw.data.encode: [0, 1]^p, one-hot categories).
""" + _BUDGET + """norm_bound : float, optional
    A public bound on ||x||_2 from the schema (the logistic methods' sensitivity).
""" + _ROWS + """
Returns
-------
self
    With ``privacy_`` (a :class:`dpiw.privacy.spend.PrivacySpend`) set.
"""

WEIGHTS_LOG_RATIO = """The estimated log importance weights log p_D(x)/p_G(x) (post-processing of the fit).

Parameters
----------
X : numpy.ndarray
    Encoded rows, as for :meth:`fit`.

Returns
-------
numpy.ndarray
    One log weight per row (-inf where the weight is 0).
"""

FRAMES_WEIGHTS_FIT = """Weights from the scaled rows themselves (a method that discretises them into public cells).

Parameters
----------
real, synth : pandas.DataFrame
    The scaled private rows D and the synthetic rows G (categorical columns as codes).
schema : dpiw.data.schema.Schema
    The columns, their public bounds or categories, and the target.
""" + _BUDGET + _ROWS + """
Returns
-------
self
    With ``privacy_`` and ``log_ratio_`` (one log weight per synthetic row) set.
"""

FRAMES_WEIGHTS_REWEIGHT = """The log weights of synthetic rows from the released measurements alone (post-processing).

Parameters
----------
synth : pandas.DataFrame
    Scaled synthetic rows.

Returns
-------
self
    With ``log_ratio_`` (one log weight per row of ``synth``) set.
"""

GAN_WEIGHTS_FIT = """Weights from a fitted GAN's kept discriminators.

Parameters
----------
discriminators : dpiw.sdgp.gan_models.Discriminators
    The GAN's kept discriminators (released with the GAN, so reading them spends nothing).
real, synth : pandas.DataFrame
    The scaled private rows D and the synthetic rows G.
epsilon, delta : float
    The method's share of the run's budget (pgb spends it; discriminator and drs spend nothing).
rng : numpy.random.Generator
    The stage's noise stream.
rows : dpiw.privacy.neighbours.RowCount, optional
    N_D as the mechanism may use it (pgb's score divides by it).

Returns
-------
self
    With ``privacy_`` and ``log_ratio_`` (one log weight per synthetic row) set.
"""


def shared_doc(text: str, extra: str = ""):
    """Attach ``text`` (and a method-specific ``extra`` paragraph) as the decorated function's docstring."""

    def attach(func):
        func.__doc__ = text + (f"\nNotes\n-----\n{extra}\n" if extra else "")
        return func

    return attach
