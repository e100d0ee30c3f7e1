"""Writes data/examples/clinic.csv: a small, entirely fabricated table (no real person) for the README's
"bring your own data" example: two numeric columns, two categorical ones and a binary outcome.

    python data/examples/make_clinic.py
"""

from pathlib import Path

import numpy as np
import pandas as pd

rng = np.random.default_rng(20261123)
n = 400
age = rng.integers(18, 91, n)
bmi = np.round(rng.normal(27, 5, n).clip(16, 48), 1)
smoker = rng.choice(["no", "yes"], n, p=[0.75, 0.25])
region = rng.choice(["north", "south", "east", "west"], n)
z = -6.0 + 0.05 * age + 0.08 * bmi + 1.2 * (smoker == "yes") + 0.4 * (region == "east")
outcome = np.where(rng.uniform(size=n) < 1 / (1 + np.exp(-z)), "ill", "healthy")
pd.DataFrame({"age": age, "bmi": bmi, "smoker": smoker, "region": region, "outcome": outcome}).to_csv(
    Path(__file__).with_name("clinic.csv"), index=False)
