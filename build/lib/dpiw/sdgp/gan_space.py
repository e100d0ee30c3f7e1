"""The space a GAN works in: each scaled column as a block of the network's input/output.

Numeric columns are one unit in [0, 1] (sigmoid output); a categorical column is a one-hot block
(softmax, relaxed with Gumbel-softmax while training, sampled when releasing). A conditional GAN
takes the target out of the generated blocks and feeds it as a condition: a categorical target is
its own condition; a numeric target is cut into ``condition_bins`` public equal-width bins, the bin
is the condition and the generator outputs the position inside the bin.

Everything here is a deterministic function of the public schema (no data), so the layout itself is
public. Pure numpy; the torch side lives in :mod:`dpiw.sdgp.gan`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpiw import DpiwError
from dpiw.data.schema import Schema


@dataclass(frozen=True)
class Block:
    name: str
    kind: str  # "numeric" | "categorical"
    width: int


class GanSpace:
    """Encoding of a scaled frame for one GAN: generated blocks + optional condition."""

    def __init__(self, schema: Schema, *, conditional: bool, condition_bins: int = 4):
        self.schema = schema
        self.conditional = conditional
        self.condition_bins = condition_bins
        target = schema.column(schema.target) if conditional else None
        if conditional and target.is_numeric and not (isinstance(condition_bins, int) and condition_bins >= 2):
            raise DpiwError(f"sdgp.gan.condition_bins must be an integer >= 2, got {condition_bins}")
        self.target = target
        self.n_conditions = (len(target.categories) if not target.is_numeric else condition_bins) if target else 0
        blocks = []
        for c in schema.columns:
            if conditional and c.name == target.name and not c.is_numeric:
                continue  # the condition itself
            blocks.append(Block(c.name, "numeric" if c.is_numeric else "categorical",
                                1 if c.is_numeric else len(c.categories)))
        self.blocks = tuple(blocks)
        self.width = sum(b.width for b in blocks)

    @property
    def d_input(self) -> int:
        """Width of the discriminator's input: generated blocks + one-hot condition."""
        return self.width + self.n_conditions

    def slices(self):
        start = 0
        for b in self.blocks:
            yield b, slice(start, start + b.width)
            start += b.width

    def conditions(self, df: pd.DataFrame) -> np.ndarray | None:
        """The condition index of each row (None for an unconditional GAN)."""
        if not self.conditional:
            return None
        v = df[self.target.name].to_numpy()
        if self.target.is_numeric:
            return np.minimum((v.astype(float) * self.n_conditions).astype(np.int64), self.n_conditions - 1)
        return v.astype(np.int64)

    def encode(self, df: pd.DataFrame) -> np.ndarray:
        """Scaled frame -> (n, width) float32 matrix in the generated space (conditions excluded)."""
        cond = self.conditions(df)
        out = np.zeros((len(df), self.width), dtype=np.float32)
        for b, sl in self.slices():
            v = df[b.name].to_numpy()
            if b.kind == "numeric":
                v = v.astype(float)
                if self.conditional and b.name == self.target.name:  # position inside the condition's bin
                    v = np.clip(v * self.n_conditions - cond, 0.0, 1.0)
                out[:, sl.start] = v
            else:
                out[np.arange(len(df)), sl.start + v.astype(np.int64)] = 1.0
        return out

    def one_hot(self, cond: np.ndarray | None) -> np.ndarray:
        if cond is None:
            return np.zeros((0, 0), dtype=np.float32)
        return np.eye(self.n_conditions, dtype=np.float32)[cond]

    def discriminator_input(self, df: pd.DataFrame) -> np.ndarray:
        """What the discriminator sees of a scaled frame: encoded blocks and one-hot condition."""
        x = self.encode(df)
        return np.hstack([x, self.one_hot(self.conditions(df))]) if self.conditional else x

    def decode(self, x: np.ndarray, cond: np.ndarray | None, probs_rng: np.random.Generator | None = None
               ) -> pd.DataFrame:
        """Generated matrix (numeric in [0, 1], categorical as probabilities) -> scaled frame.

        Categorical blocks are sampled from their probabilities with ``probs_rng`` (argmax without one).
        """
        out = {}
        for b, sl in self.slices():
            block = x[:, sl]
            if b.kind == "numeric":
                v = np.clip(block[:, 0].astype(float), 0.0, 1.0)
                if self.conditional and b.name == self.target.name:
                    v = (cond + v) / self.n_conditions
                out[b.name] = np.clip(v, 0.0, 1.0)
            elif probs_rng is None:
                out[b.name] = block.argmax(axis=1).astype(np.int64)
            else:
                p = np.clip(block.astype(float), 0.0, None)
                p /= p.sum(axis=1, keepdims=True)
                cdf = np.cumsum(p, axis=1)
                cdf[:, -1] = 1.0
                out[b.name] = (probs_rng.uniform(size=(len(p), 1)) > cdf).sum(axis=1).astype(np.int64)
        if self.conditional and not self.target.is_numeric:
            out[self.target.name] = cond.astype(np.int64)
        return pd.DataFrame(out)[self.schema.names]
