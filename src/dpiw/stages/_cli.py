"""What every stage shares: one-line errors with exit status 2, flag parsing helpers, and the noise
flags (mode, release noise) with the identity that keys a stage's random streams."""

from __future__ import annotations

import argparse
import errno
import sys
from collections.abc import Callable, Iterable
from typing import Any

from dpiw import DpiwError

#: OS errors a user can act on, and what to do about each
_OS_HINTS = {errno.ENOSPC: "the disk is full: free space and rerun",
             errno.EROFS: "the file system is read-only: run from a writable directory",
             errno.EACCES: "permission denied: check the folder's permissions",
             errno.EDQUOT: "the disk quota is exceeded: free space and rerun"}


def error_message(exc: BaseException) -> str | None:
    """The one line a user sees for a DpiwError, or an OS error they can act on (disk full, read-only,
    permission); None for anything else (a bug: let its traceback show)."""
    if isinstance(exc, DpiwError):
        return str(exc)
    if isinstance(exc, OSError) and exc.errno in _OS_HINTS:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror} ({_OS_HINTS[exc.errno]})"
    return None


def run(main: Callable[[list[str] | None], None], argv: list[str] | None = None) -> None:
    """Call ``main``; a DpiwError, or an OS error a user can act on, becomes ``error: <message>`` on
    stderr and exit status 2 (the atomic writers leave no partial file)."""
    try:
        main(argv)
    except (DpiwError, OSError) as exc:
        message = error_message(exc)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2) from None


def add_noise_args(p: argparse.ArgumentParser) -> None:
    """--mode and --release-noise (dpiw.privacy.seeding), for every stage that draws random numbers."""
    from dpiw.privacy.seeding import MODES, RELEASE_NOISE

    p.add_argument("--mode", choices=MODES, default="benchmark",
                   help="benchmark: public seeds, same bytes every run, never fit to release; release: secret noise")
    p.add_argument("--release-noise", choices=RELEASE_NOISE, default="entropy",
                   help="release mode: fresh OS entropy, or the secret key in DPIW_SECRET_KEY (reproducible)")
    p.add_argument("--release-round", type=int,
                   help="privacy.release_round: the k-th release (2, 3, ...) of the same table and choices "
                        "(`dpiw release --new-release`); it keys the noise, so a secret key draws fresh noise")


def add_neighbours_args(p: argparse.ArgumentParser) -> None:
    """--neighbours and --count-epsilon-fraction (dpiw.privacy.neighbours), for the stages that read N_D."""
    from dpiw.privacy.neighbours import DEFAULT, NEIGHBOURS

    p.add_argument("--neighbours", choices=NEIGHBOURS, default=DEFAULT,
                   help="privacy.neighbours: replace_one (N_D public) or add_remove (N_D private: a noisy count "
                        "stands in for it)")
    p.add_argument("--count-epsilon-fraction", type=float,
                   help="privacy.count_epsilon_fraction: under add_remove, the share of this stage's epsilon "
                        "spent on its noisy row count")


def count_epsilon(args, epsilon: float) -> float:
    """The part of a stage's ``epsilon`` its noisy row count takes (0 under replace-one)."""
    if args.neighbours == "replace_one" or epsilon == 0:
        return 0.0
    frac = args.count_epsilon_fraction
    if frac is None or not (0 < frac < 1):
        raise DpiwError(f"--neighbours add_remove needs --count-epsilon-fraction in (0, 1), got {frac}")
    return epsilon * frac


def stage_rows(args, n_private: int, epsilon: float, noise, stream: str, who: dict):
    """The stage's :class:`dpiw.privacy.neighbours.RowCount`: the exact N_D under replace-one, else a noisy count
    with ``epsilon`` from its own stream."""
    from dpiw.privacy.neighbours import RowCount, row_count

    if args.neighbours == "replace_one" or epsilon == 0:
        return RowCount.exact(n_private) if args.neighbours == "replace_one" else None
    return row_count(n_private, neighbours=args.neighbours, epsilon=epsilon, rng=noise.rng(stream, who))


def noise_from(args) -> Any:
    from dpiw.privacy.seeding import Noise

    return Noise(args.mode, args.release_noise)


#: flags left out of a stage's identity at these values: options added later, at the behaviour they keep,
#: so that adding one does not redraw the noise of every run that does not use it
NEUTRAL = {"neighbours": "replace_one", "count_epsilon_fraction": None, "privbayes_root": "random",
           "max_rows": 1_000_000,
           # sdgp.aim's flags, unset for every other SDGP
           **{f"aim_{key}": None for key in ("bins", "iters", "rounds", "max_model_size", "max_cells",
                                             "target_triples")},
           # the fine histograms' flags (sdgp.mst and sdgp.aim), unset for every other SDGP
           **{f"{sdgp}_{key}": None for sdgp in ("mst", "aim") for key in ("fine_cells", "fine_fraction")},
           "mst_max_bins": None, "mst_tree": "chosen", "release_round": None}


def identity(args, *, inputs: Iterable[str], outputs: Iterable[str]) -> dict[str, Any]:
    """The full identity of a stage invocation, which keys its random streams: every flag except the paths,
    the counting engine (and the :data:`NEUTRAL` ones at their neutral value), and the SHA-256 of every input
    file (so new data never meets old noise; a schema's without where its file's rows were read from:
    :func:`dpiw.privacy.seeding.schema_digest`)."""
    from dpiw.privacy.seeding import file_digest, schema_digest

    # the counting engine never keys the noise: every engine gives the same counts of the same rows
    inputs, skip = list(inputs), {*inputs, *outputs, "mode", "release_noise", "engine"}
    out: dict[str, Any] = {k: v for k, v in sorted(vars(args).items())
                           if k not in skip and not (k in NEUTRAL and v == NEUTRAL[k])}
    out["inputs"] = {k: (schema_digest if k == "schema" else file_digest)(getattr(args, k))
                     for k in inputs if getattr(args, k)}
    return out


def add_engine_argument(p) -> None:
    """--engine: where the stage counts the private rows (dpiw.sdgp.engines)."""
    from dpiw.sdgp.engines import ENGINES

    p.add_argument("--engine", default=ENGINES[0],
                   help=f"engine (config): where the private rows are counted: {', '.join(ENGINES)} or "
                        "dask=SCHEDULER_ADDRESS")


def boolean(text: str) -> bool:
    t = str(text).strip().lower()
    if t in ("true", "1", "yes"):
        return True
    if t in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def delta_arg(text: str) -> str | float:
    """'paper', 'auto' or a float in (0, 1) (dpiw.privacy.spend.run_delta)."""
    if text in ("paper", "auto"):
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"delta must be 'paper', 'auto' or a number in (0, 1), got {text!r}") from None
    if not (0 < value < 1):
        raise argparse.ArgumentTypeError(f"delta must be in (0, 1), got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a positive finite number, got {value}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


#: the help of the flags several stages share (one text each); a stage's own flags carry their own help
COMMON_HELP = {
    "--schema": "the dataset's schema (data/schemas/<name>.yaml): columns, public bounds, target",
    "--dataset": "the dataset's name (for the records and messages)",
    "--sdgp": "the synthetic data generator's name (dpiw.registry)",
    "--seed": "the run's seed: the data split and, in benchmark mode, the public noise streams",
    "--eps": "the run's total epsilon, as written in the run's path",
    "--weights": "the weight method of the run",
    "--post": "the run's post-processing chain (a step or a '+' chain)",
    "--delta": "the run's delta: 'auto' (N_D^-1.5), 'paper' (1/N_D - 1e-6) or a number below 1/N_D",
    "--weights-epsilon-fraction": "privacy.weights_epsilon_fraction: the weight methods' share of epsilon",
    "--weights-delta-fraction": "privacy.weights_delta_fraction: the weight methods' share of delta",
    "--out": "where the stage's artifact goes (written atomically)",
    "--privacy-out": "where the stage's privacy record (JSON) goes",
    "--synth": "the synthetic rows (parquet, scaled)",
    "--train": "the private train split (parquet, scaled)",
    "--log-weights": "the run's log weights (parquet, one per synthetic row)",
    "--log-ratios": "the estimated log density ratios (parquet, one per synthetic row)",
}


class Parser(argparse.ArgumentParser):
    """argparse that exits with status 2 and one line (its default also prints the usage); a flag added
    without help takes its text from :data:`COMMON_HELP`."""

    def add_argument(self, *names, **kwargs):
        if not kwargs.get("help") and names and names[0] in COMMON_HELP:
            kwargs["help"] = COMMON_HELP[names[0]]
        return super().add_argument(*names, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        """An unknown ``--flag`` is named first (with the flag it may mean), before argparse would report a
        required flag as missing (``--epsilion 1`` is a misspelt --epsilon, not a missing one)."""
        if self._subparsers is None:
            import difflib

            args = list(sys.argv[1:] if args is None else args)

            known = [o for o in self._option_string_actions if o.startswith("--")]
            for token in args:
                if token == "--":
                    break
                flag = token.split("=", 1)[0]
                if flag.startswith("--") and not any(o.startswith(flag) for o in known):
                    close = difflib.get_close_matches(flag, known, n=1)
                    self.error(f"unrecognized argument {flag}" + (f" (did you mean {close[0]}?)" if close else ""))
        return super().parse_known_args(args, namespace)

    def error(self, message):
        self.exit(2, f"error: {self.prog}: {message}\n")
