"""A data-free SDGP: uniform on the public box. It reads no private row and spends nothing.

On the toy data it is the paper's SDGP (uniform square), for which the true weights are known.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpiw._docs import SDGP_FIT, SDGP_SAMPLE, shared_doc
from dpiw.data.schema import Schema
from dpiw.privacy.spend import PrivacySpend, no_spend


class UniformBox:
    def __init__(self):
        self.schema_: Schema | None = None
        self.privacy_: PrivacySpend | None = None

    @shared_doc(SDGP_FIT, "Data-free: reads neither the rows nor the budget.")
    def fit(self, train: pd.DataFrame, schema: Schema, *, epsilon: float, delta: float,
            rng: np.random.Generator, rows=None) -> UniformBox:
        self.schema_ = schema
        self.privacy_ = no_spend("synthesize", basis="data-free generator: samples the public bounds box, "
                                 "never reads the private rows", generator="uniform")
        return self

    @shared_doc(SDGP_SAMPLE)
    def sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        out = {}
        for c in self.schema_.columns:
            if c.is_numeric:
                out[c.name] = rng.uniform(size=n)
            else:
                out[c.name] = rng.integers(len(c.categories), size=n)
        return pd.DataFrame(out)[self.schema_.names]
