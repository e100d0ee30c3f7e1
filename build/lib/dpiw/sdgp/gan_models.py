"""A fitted GAN's kept networks as a plain ``.npz`` file, and its discriminators in numpy.

The file holds one JSON string ``meta`` (variant, loss, sizes, the conditions' public probabilities)
and every parameter as ``generator/<k>/<name>`` or ``discriminator/<k>/<name>`` arrays (k = 0 is the
oldest kept snapshot). No pickle, no torch needed to read it: the weight methods that reuse the
discriminators (`discriminator`, `pgb`, `drs`) evaluate them here in numpy, so their jobs do not pay
torch's import time.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from dpiw import DpiwError
from dpiw.data.schema import Schema
from dpiw.io import _atomic
from dpiw.sdgp.gan_space import GanSpace

#: parameter names of dpiw.sdgp.gan.mlp (Linear, LeakyReLU, Linear, LeakyReLU, Linear)
LAYERS = ("0", "2", "4")
LEAKY_SLOPE = 0.2


def save_models(models: dict, path: str | Path) -> None:
    """``models``: meta keys plus "generators"/"discriminators", lists of {name: array-like}."""
    arrays = {}
    for part in ("generators", "discriminators"):
        for k, state in enumerate(models[part]):
            for name, value in state.items():
                arrays[f"{part[:-1]}/{k}/{name}"] = np.asarray(value, dtype=np.float32)
    meta = {k: v for k, v in models.items() if k not in ("generators", "discriminators")}
    meta["n_kept"] = len(models["discriminators"])
    arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)

    _atomic(Path(path), write)


def load_models(path: str | Path) -> dict:
    """The inverse of :func:`save_models` (arrays as numpy)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            out = dict(meta, generators=[], discriminators=[])
            for part in ("generators", "discriminators"):
                for k in range(meta["n_kept"]):
                    prefix = f"{part[:-1]}/{k}/"
                    out[part].append({key[len(prefix):]: z[key] for key in z.files if key.startswith(prefix)})
    except (OSError, ValueError, KeyError) as exc:
        raise DpiwError(f"{path}: not a dpiw GAN model file ({exc})") from exc
    return out


def mlp_forward(state: dict, x: np.ndarray) -> np.ndarray:
    """dpiw.sdgp.gan.mlp in numpy: (n, d_in) -> (n, d_out)."""
    h = x
    for i, layer in enumerate(LAYERS):
        h = h @ np.asarray(state[f"{layer}.weight"], float).T + np.asarray(state[f"{layer}.bias"], float)
        if i < len(LAYERS) - 1:
            h = np.where(h > 0, h, LEAKY_SLOPE * h)
    return h


class Discriminators:
    """The kept discriminators of a fitted GAN, as numpy functions of a scaled frame."""

    def __init__(self, models: dict, schema: Schema):
        self.loss = models["loss"]
        self.space = GanSpace(schema, conditional=models["conditional"], condition_bins=models["condition_bins"])
        self.states = models["discriminators"]
        if not self.states:
            raise DpiwError("the GAN model file keeps no discriminator")

    def __len__(self) -> int:
        return len(self.states)

    def outputs(self, df: pd.DataFrame) -> np.ndarray:
        """(K, n) raw outputs (critic values or logits), oldest discriminator first."""
        x = self.space.discriminator_input(df).astype(float)
        return np.stack([mlp_forward(s, x)[:, 0] for s in self.states])
