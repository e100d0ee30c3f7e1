"""dpiw: differentially private synthetic data with DP importance weights.

The algorithms live in the sub-packages (pure functions and estimators, arrays in and arrays out);
``dpiw.stages`` holds the thin command-line stages that Snakemake and DVC call.
"""

__version__ = "0.1.0"


class DpiwError(Exception):
    """An error the user can fix: bad input, a bad config or a budget too small.

    Stages catch it, print ``error: <message>`` on one line and exit with status 2,
    leaving no partial artifact behind.
    """
