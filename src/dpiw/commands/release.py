"""Release DP synthetic data and DP importance weights of your own table, in one command (release mode).

Every row of DATA is private. A release is a transaction. It first finds the table's lifetime ledger (in the
store printed first: --ledger, else $DPIW_LEDGER_URL, else privacy.ledger, else ledger.sqlite in the user's dpiw
folder) by the table's rows, whatever its file, name or project folder, and refuses, before anything runs, a
release that would take the table past its lifetime budget, and charges the admissible plan to the ledger (a
reservation: a release killed after it started stays charged what it planned; its admission at the end settles it,
and a failure before any stage drew noise on the private rows cancels it). Then it runs the workflow in a folder of
its own,
releases/<name>/<release>/ in the project folder (--project, default the current directory), which no other
release shares or overwrites: the config, the schema and the private working files beside the bundle. Bad input
(a flag, the schema, a row) is refused with one line before the release writes anything, and what it had made of a
new project folder is taken back; a release that fails or is refused after that leaves only its log
(logs/releases/<name>/<release>.log) and one line;
a release that was killed resumes when the same command runs again (charged once, by the killed run's
reservation, unless the rerun would draw again noise the killed run wrote out); the same command after its release was
admitted prints the existing bundle and spends nothing (--new-release makes another one; a schema with other
bounds, categories or target is another release, and spends). One release of a
population runs at a time. The noise is fresh OS entropy, or derived from DPIW_SECRET_KEY when it is set (the same
rows and weights again for whoever holds the key; keep it as secret as the data).

    dpiw release data/examples/clinic.csv --schema data/schemas/clinic.yaml --epsilon 1
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
from contextlib import ExitStack, contextmanager
from pathlib import Path

import yaml

from dpiw import DpiwError, registry
from dpiw.commands.project import add_argument as add_project_argument
from dpiw.commands.show import describe
from dpiw.io import read_json
from dpiw.privacy.neighbours import NEIGHBOURS

#: the weight methods a release can use: DP, and not the toy data's oracle (`true`)
RELEASABLE_WEIGHTS = tuple(w for w in registry.weight_names(dp=True)
                           if registry.weight_method(w).applies_to != "toy_uniform")
#: what a value outside a column's public bounds gets by default (`--out-of-bounds`; docs/release.md says the same)
OUT_OF_BOUNDS = "clip"
#: the output folder of the workflow inside a release's folder
RUN = "run"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", metavar="DATA", help="your private table: a CSV with a header, a parquet file, or a "
                                                 "folder of parquet files (hive partitions too)")
    p.add_argument("--schema", required=True,
                   help="its schema (YAML): every column's type and PUBLIC bounds or categories, and the target "
                        "(start from `dpiw schema infer DATA`)")
    p.add_argument("--epsilon", type=float, required=True, help="the release's total epsilon (generator + weights)")
    p.add_argument("--delta", default="auto",
                   help="the release's delta: 'auto' (default: N_D^-1.5, well below 1/N_D at every size), 'paper' "
                        "(1/N_D - 1e-6, the paper's rule; 0 from a million rows on) or a number below 1/N_D")
    p.add_argument("--sdgp", default="mst", choices=registry.sdgp_names(dp=True),
                   help="the DP generator (default mst: MST on Private-PGM)")
    p.add_argument("--weights", default="auto", choices=("auto", *RELEASABLE_WEIGHTS),
                   help="the DP weight method; auto (default): the budget advisor picks marginal_match where its "
                        "measurements are expected to see past their noise (from the row count, the schema's cells "
                        "and epsilon), else none, giving the whole epsilon to the generator")
    p.add_argument("--tree", default="chosen", choices=registry.MST_TREES,
                   help="MST's tree of measured pairs: chosen (default: MST picks them from the rows, by the "
                        "exponential mechanism) or target (every column measured with the schema's target, no "
                        "other pair: for analyses of the target; nothing is spent on the choice)")
    p.add_argument("--post", default="none",
                   help="the post-processing chain, steps joined with '+' (default none; e.g. psis for the logistic "
                        "weights, temper+psis); steps: " + ", ".join(registry.POST_STEPS))
    p.add_argument("--dataset-epsilon", type=float,
                   help="the table's lifetime epsilon, over all its releases: set when its ledger is created "
                        "(default 10, printed); afterwards it must be the stored one (change it with `dpiw ledger "
                        "set-budget`)")
    p.add_argument("--dataset-delta", type=float,
                   help="the table's lifetime delta, set when its ledger is created (default: this release's delta; "
                        "`dpiw ledger set-budget --delta` may lower it later)")
    p.add_argument("--ledger", help="the ledger store: a SQLite path or a postgresql:// URL (it beats "
                                    "$DPIW_LEDGER_URL, which beats privacy.ledger; default ledger.sqlite in the user's "
                                    "dpiw folder, $DPIW_HOME or the platform's user data folder)")
    p.add_argument("--out-of-bounds", choices=("clip", "fail"), default=OUT_OF_BOUNDS,
                   help=f"a value outside its column's public bounds: clip it to the bounds (default {OUT_OF_BOUNDS}; "
                        "a column with more than scale.max_clip_fraction of its values outside is still refused) or "
                        "fail before anything runs")
    p.add_argument("--new-population", metavar="REASON",
                   help="this table shares many rows with a ledgered table but holds other people: give it a ledger "
                        "of its own; the reason is kept in the ledger (without it such a table is charged to the "
                        "earlier table's ledger)")
    p.add_argument("--new-release", action="store_true",
                   help="release again although this same command's release was admitted before (it spends again)")
    p.add_argument("--neighbours", choices=NEIGHBOURS, default="replace_one",
                   help="replace_one (the row count is public) or add_remove (it is private; needs a numeric "
                        "--delta)")
    p.add_argument("--engine", default="local",
                   help="where the private rows are counted: local (default), duckdb (SQL over the parquet "
                        "files, every core), dask (a local Dask cluster of 2 workers) or dask=SCHEDULER_ADDRESS; "
                        "the counts, so the release, are the same on every engine")
    p.add_argument("--cores", default="all", help="CPU cores for the workflow's jobs")
    add_project_argument(p)


def _advise(args, n_rows: int, schema_path: Path, delta) -> str:
    """The budget advisor's pick (dpiw.weights.advisor), printed with its reason. It reads the row count, which
    is public under replace-one neighbours only."""
    from dpiw.data.schema import load_schema
    from dpiw.privacy.spend import run_delta
    from dpiw.weights.advisor import WEIGHTS_FRACTION, advise

    if args.neighbours != "replace_one":  # the advisor reads N_D, which is private here: no weights, said so
        print("dpiw release: weights none: under add/remove neighbours the row count is private and the advisor "
              "cannot read it, so the whole epsilon goes to the generator (name --weights marginal_match to spend "
              "a share on weights)")
        return "none"
    if args.sdgp != "mst":
        raise DpiwError(f"--weights auto advises after mst only; with --sdgp {args.sdgp} name the weight method")
    schema = load_schema(schema_path)
    advice = advise(n_rows, schema, epsilon=args.epsilon, delta=run_delta(delta, n_rows, "replace_one"),
                    fraction=WEIGHTS_FRACTION)
    print(f"dpiw release: weights {advice.method}: {advice.reason}")
    return advice.method


def _check_choices(args) -> None:
    """The post chain and the engine parse and the weight method applies to the SDGP, before anything runs."""
    from dpiw.postprocess import parse_post

    try:
        parse_post(args.post)
    except DpiwError as exc:
        raise DpiwError(f"--post: {exc}") from None
    from dpiw.sdgp.engines import parse_engine

    try:
        parse_engine(args.engine)
    except DpiwError as exc:
        raise DpiwError(f"--{exc}") from None
    if args.weights != "auto" and registry.weight_method(args.weights).applies_to == "gan" \
            and not registry.sdgp(args.sdgp).gan:
        gans = ", ".join(s for s in registry.sdgp_names(dp=True) if registry.sdgp(s).gan)
        raise DpiwError(f"--weights {args.weights} reuses a GAN's networks: choose --sdgp {gans}, or another weight "
                        "method")


def _preflight(args, data: Path, schema_path: Path, delta, params: Path) -> int | None:
    """Check what can be checked before anything private is written: the table reads under its schema and the
    delta is below 1/N_D (replace-one; the row count is private under add/remove). Returns N_D (replace-one)."""
    from dpiw.data.datasets import count_rows
    from dpiw.data.schema import load_schema
    from dpiw.privacy.spend import run_delta

    for flag, value in (("--delta", None if isinstance(delta, str) else delta),
                        ("--dataset-delta", args.dataset_delta)):
        if value is not None and not 0 < value < 1:
            raise DpiwError(f"{flag} must be in (0, 1), got {value:g}")
    if args.dataset_epsilon is not None and not (0 < args.dataset_epsilon < float("inf")):
        raise DpiwError(f"--dataset-epsilon must be a positive number, got {args.dataset_epsilon}")
    schema = load_schema(schema_path)
    if args.tree != "chosen" and args.sdgp != "mst":
        raise DpiwError(f"--tree {args.tree} is MST's; --sdgp {args.sdgp} chooses its marginals its own way: leave "
                        "--tree out, or use --sdgp mst")
    if registry.sdgp(args.sdgp).zcdp:  # the marginal SDGPs' domain guard, before any row is read
        from dpiw.planning.config import load_yaml
        from dpiw.sdgp import make_sdgp

        settings = {**load_yaml(params)["sdgp"][args.sdgp], **({"tree": args.tree} if args.sdgp == "mst" else {})}
        make_sdgp(args.sdgp, **settings).check_domain(schema)  # the star counts its own pairs only
    if args.neighbours != "replace_one":
        return None
    left_out: list[str] = []
    n_rows = count_rows(schema, str(data), left_out=left_out)  # a chunk at a time: the table may be larger than memory
    if left_out:  # public: the file's header, not its rows
        print(f"dpiw release: the file's column(s) {left_out} are not in the schema: left out of the release")
    run_delta(delta, n_rows, "replace_one", flag="--delta")  # refuses a delta of 1/N_D or more
    return n_rows


@contextmanager
def one_release_at_a_time(key: str, name: str):
    """Hold the release lock of a population (its ledger's key; released by the OS if the process dies), or
    refuse with one line. The lock lives in the user's dpiw folder, so it holds across project folders."""
    from dpiw.privacy.store import user_folder

    lock = user_folder() / "locks" / f"{key[:24]}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            raise DpiwError(f"another `dpiw release` of '{name}' (or of a table charged to its ledger) is running "
                            f"({fh.read().strip() or 'pid unknown'}): wait for it to end, then run this one again"
                            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}")
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _finite_positive(flag: str, value: float | None) -> None:
    if value is not None and not (0 < value < math.inf):
        raise DpiwError(f"{flag} must be positive and finite, got {value:g}")


def main(args) -> None:
    from dpiw.commands.project import discard_new_project, enter, new_project_line, project_params

    data, schema_path = Path(args.data), Path(args.schema)
    from dpiw.data.datasets import is_table

    if not is_table(data):
        if data.is_dir():
            raise DpiwError(f"DATA {data}: the folder holds no parquet file (a table is a CSV, a parquet file or a "
                            "folder of parquet files)")
        raise DpiwError(f"DATA {data}: no such file (or folder of parquet files)")
    if not schema_path.is_file():
        raise DpiwError(f"--schema {schema_path}: no such file")
    data, schema_path, args.origin = data.resolve(), schema_path.resolve(), Path.cwd()
    args.data, args.schema = str(data), str(schema_path)  # the command changes into the project folder below
    _finite_positive("--epsilon", args.epsilon)
    try:
        delta = args.delta if args.delta in ("paper", "auto") else float(args.delta)
    except ValueError:
        raise DpiwError(f"--delta must be 'auto', 'paper' or a number, got {args.delta!r}") from None
    _check_choices(args)
    n_rows = _preflight(args, data, schema_path, delta, project_params(args.project))
    made: list[Path] = []
    root = enter(args.project, announce=False, made=made)  # the project folder (made now): what follows works there
    with ExitStack() as held:
        try:  # the rows' checks, an earlier admission, the lifetime budget: nothing written yet
            table, schema, url = _admit_rows(args, root, data, schema_path)
            held.enter_context(one_release_at_a_time(table.target, schema.name))
            earlier = _admitted_before(args, root, schema, url, table)  # said on the terminal when found
            plan = None if earlier else _plan(args, root, data, schema, url, table, delta, n_rows)
        except BaseException:  # refused: what enter made is taken back, not left half made
            discard_new_project(made, args.origin)
            raise
        if earlier:  # nothing to release: a folder made for it goes too
            discard_new_project(made, args.origin)
            return
        if root / "params.yaml" in made:
            print(new_project_line(root))
        _release(args, root, data, schema, url, table, delta, n_rows, plan)


def _admit_rows(args, root: Path, data: Path, schema_path: Path):
    """The ledger store, and the one pass over the rows (the table's identity and every check of the scale
    stage): bad input is refused here, before anything is written. Returns (table, schema, store url)."""
    from dpiw.data.schema import load_schema
    from dpiw.planning.config import load_yaml
    from dpiw.privacy.store import Store, store_url

    schema = load_schema(schema_path)
    url = store_url(args.ledger, load_yaml(root / "params.yaml")["privacy"].get("ledger"))
    print(f"dpiw release: ledger store {_where(url, args.origin)}")
    old = root / "ledgers" / "ledger.sqlite"  # the earlier layout kept one store per project folder
    if old.is_file() and "://" not in url and Path(url).resolve() != old.resolve():
        raise DpiwError(f"this project keeps its tables' spend in {old} (the earlier per-project store): release with "
                        f"--ledger {old.relative_to(root)} (or privacy.ledger), or move it to {url} if that store is "
                        "new, so that no table starts again at zero")
    earlier_bundles_in_the_ledger(root, url)
    from dataclasses import replace

    from dpiw.data.datasets import CODES_FIX, RowChecks

    # one pass over the rows: the table's identity, and every check the scale stage makes (NaN, inf, text in a
    # numeric column, unknown categories, bounds): bad input is refused here, before anything is written
    checks = RowChecks(schema, out_of_bounds=args.out_of_bounds, clip_fix="pass --out-of-bounds clip")
    table = _resolve(Store(url), replace(schema, source={**schema.source, "kind": "file", "path": str(data)}),
                     args.new_population, checks, args.engine)
    checks.finish()  # bad rows are refused before anything is said of the table's ledger
    _say_where(table, args.new_population)
    clipped = checks.clipped(max_fraction=float(load_yaml(root / "params.yaml")["scale"]["max_clip_fraction"]))
    from dpiw.scale import share_text

    for what, shares in (("clipped to their public bounds", clipped),
                         ("rounded to whole numbers (integer: true in the schema)", checks.rounded())):
        shares = {name: share for name, share in shares.items() if share > 0}
        if shares:  # said to the curator only (shares and counts of the private rows: never into an artifact)
            clip = what.startswith("clipped")
            print(f"dpiw release: {what}: " + ", ".join(
                f"{name} {share_text(share)} of its values" + (f" ({checks.sides(name)})" if clip else "")
                for name, share in shares.items())
                + (f" ({CODES_FIX})" if clip else ""))
    cells = int((load_yaml(root / "params.yaml")["sdgp"].get(args.sdgp) or {}).get("fine_cells") or 0)
    from dpiw.sdgp.binning import FineGrid

    for name in checks.top_coded():  # said to the curator only, as above; where the generator's fine cells are
        if not cells or FineGrid.of(schema.column(name), cells).per_integer:  # none, or a cell per whole number
            continue
        print(f"dpiw release: {name}: its values above {schema.column(name).upper:g} are held at that bound, a top "
              f"code, and would be drawn across the top fine cell: `spikes: [{schema.column(name).upper:g}]` in its "
              "schema entry keeps them as that value")
    if schema.missing_note():
        print(f"dpiw release: empty values: {schema.missing_note()}")
    return table, schema, url


def _resolve(store, schema, new_population, checks, engine):
    from dpiw.privacy.ledger import resolve

    return resolve(store, schema, new_population=new_population, checks=checks, engine=engine)


def _say_where(table, new_population) -> None:
    if table.note():
        print(f"dpiw release: {table.note()}")
    elif table.via == "new" and table.earlier:
        print(f"dpiw release: a new population ({new_population.strip()}), although it shares about "
              f"{table.share:.0%} of its rows with '{', '.join(table.earlier['labels'])}'")


def elsewhere_line(url: str, origin: Path | None = None) -> None:
    """Say so where this user's dpiw folder has written to other ledger stores than ``url``, in which the table
    may have been released before (a trial's `--ledger other.sqlite`: a fresh budget)."""
    from dpiw.privacy import witness

    elsewhere = witness.others(url)
    if elsewhere:
        print(f"dpiw: no release of this table in {_where(url, origin)} yet; your dpiw folder has also written to "
              f"{', '.join(elsewhere[:3])}{' and more' if len(elsewhere) > 3 else ''}: if this table was released "
              "through one of those, its spend is counted there and not here (name that store: --ledger, --store)")


def _where(url: str, origin: Path | None = None) -> str:
    from dpiw.privacy.store import describe as where

    return where(url) if "://" in url else str(Path(url).resolve())


def earlier_bundles_in_the_ledger(root: Path, url: str) -> int:
    """Refuse to release while bundles this project admitted before (every release of every table, under
    releases/) are not in the ledger store (a deleted, replaced or rewritten store would otherwise start the
    table again at zero). Returns how many were checked."""
    from dpiw.privacy.ledger import bundle_entry, verify
    from dpiw.privacy.store import Store, describe

    manifests = sorted((root / "releases").glob(f"*/*/{RUN}/runs/**/release/manifest.json"))
    entries = {os.path.relpath(m.parent, root): bundle_entry(m) for m in manifests}
    entries = {bundle: entry for bundle, entry in entries.items() if entry}
    if entries:
        try:
            verify(Store(url, create=False), entries=entries)
        except DpiwError as exc:
            raise DpiwError(f"{len(entries)} earlier bundle(s) of this project were admitted to a ledger that "
                            f"{describe(url)} does not hold ({exc}); restore the store from its backup, or point "
                            "--ledger / DPIW_LEDGER_URL at it") from None
    return len(entries)


def delta_rule(delta, value: float, n_rows: int | None) -> str:
    """Which rule set the release's delta, in words."""
    rows = f"N_D = {n_rows:,} rows" if n_rows else "the row count"
    rule = {"auto": f"--delta auto: N_D^-1.5 with {rows}, well below 1/N_D",
            "paper": f"--delta paper: 1/N_D - 1e-6 with {rows} (the paper's rule)"}.get(delta, "--delta, as given")
    return f"delta      {value:.3g}, set by {rule}"


def release_name(args, table_key: str, schema=None, *, as_given: bool = False) -> str:
    """The release's folder name: the epsilon and a digest of the table's (keyed) identity and of every choice
    that shapes the release, the schema's public part (bounds, categories, target) included, so that the same
    command finds the same release and a corrected schema makes a new one. ``schema`` None: the name releases
    had before the schema was part of it (:func:`_admitted_before` still finds them).

    `--out-of-bounds fail` only checks: a table it lets through is the one `clip` releases (nothing to clip), so
    both name the same release (``as_given``: the name a `fail` release had before, which is still found)."""
    from dpiw.planning.grid import eps_str

    choices = {"epsilon": eps_str(args.epsilon), "delta": str(args.delta), "sdgp": args.sdgp,
               "weights": args.weights, "post": args.post, "neighbours": args.neighbours,
               "out_of_bounds": args.out_of_bounds if as_given else "clip"}
    if getattr(args, "tree", "chosen") != "chosen":  # only then: the releases made before --tree keep their names
        choices["tree"] = args.tree
    if schema is not None:
        choices["schema"] = schema.public_dict()
    digest = hashlib.sha256((table_key + json.dumps(choices, sort_keys=True, default=str)).encode()).hexdigest()[:10]
    return f"eps={eps_str(args.epsilon)}-{digest}"


def params_changed(bundle: Path, params: Path, *, at_most: int = 4) -> list[str]:
    """The settings (dotted keys, old → new) where ``params`` differs from the params.yaml the release of
    ``bundle`` ran with (the copy in its release folder); [] when they agree or no copy is found."""
    from dpiw.planning.config import load_yaml

    then = next((p / "params.yaml" for p in Path(bundle).parents if (p / "release.yaml").is_file()), None)
    if then is None or not then.is_file() or not params.is_file():
        return []

    def flat(d, prefix=""):
        if not isinstance(d, dict):
            return {prefix[:-1]: d}
        return {k: v for key, sub in d.items() for k, v in flat(sub, f"{prefix}{key}.").items()}

    old, new = flat(load_yaml(then)), flat(load_yaml(params))
    keys = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    said = [f"{k}: {old.get(k)} → {new.get(k)}" for k in keys[:at_most]]
    return said + ([f"{len(keys) - at_most} more"] if len(keys) > at_most else [])


def _same_schema(bundle: Path, schema) -> bool:
    """Whether a bundle was released under this schema's public part (its schema.json)."""
    try:
        published = read_json(Path(bundle) / "schema.json")["schema"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return json.loads(json.dumps(published, default=str)) == json.loads(json.dumps(schema.public_dict(), default=str))


def _bundle_dir(folder: Path, name: str, args) -> Path:
    from dpiw.planning.grid import eps_str

    return (folder / RUN / "runs" / name / f"eps={eps_str(args.epsilon)}" / "seed=0" / args.sdgp / args.weights
            / args.post)


def _admitted(folder: Path, store) -> Path | None:
    """The bundle in a release's folder whose ledger entry is in the store (an admitted release), or None."""
    from dpiw.privacy.ledger import bundle_entry, verify

    for manifest in sorted(folder.glob(f"{RUN}/runs/**/release/manifest.json")):
        entry = bundle_entry(manifest)
        if entry:
            verify(store, entries={str(manifest.parent): entry})  # one line if the store lost it
            return manifest.parent
    return None


def _refused_and_charged(folder: Path) -> bool:
    """Whether a release's folder holds a run the gate refused that the ledger charged (its run's manifest names
    its entry): --new-release then makes the next round, with fresh noise, charged too."""
    from dpiw.privacy.ledger import bundle_entry

    for refusal in sorted(folder.glob(f"{RUN}/runs/**/release/refused.json")):
        run_manifest = refusal.parent.parent / "manifest.json"
        if run_manifest.is_file() and bundle_entry(run_manifest):
            return True
    return False


def _elsewhere(url: str, name: str, release: str) -> str | None:
    """A bundle of the same release written from another project folder (the witness's registry), or None."""
    from dpiw.privacy import witness

    for info in witness.bundles(url).values():
        if info.get("release") == f"{name}/{release}" and info.get("bundle") and Path(info["bundle"]).is_dir():
            return info["bundle"]
    return None


def _planned(args, run_delta: float) -> list[dict]:
    """What the release will spend, from its config alone: a zCDP generator with no weights or marginal_match
    (split in zCDP) composes to zCDP with rho(epsilon, delta); anything else to (epsilon, delta)."""
    from dpiw.privacy.accounting import zcdp_rho

    zcdp = registry.sdgp(args.sdgp).zcdp and args.weights in ("none", "marginal_match")
    return [{"stage": "release", "mechanism": f"{args.sdgp} + {args.weights} (planned)", "epsilon": args.epsilon,
             "delta": run_delta, "neighbours": args.neighbours,
             "rdp": [{"kind": "zcdp", "rho": zcdp_rho(args.epsilon, run_delta)}] if zcdp else []}]


def _config(args, name: str, delta, url: str) -> dict:
    from dpiw.privacy.seeding import SECRET_ENV

    # fresh OS entropy, or the curator's DPIW_SECRET_KEY when set: the same rows and weights for whoever holds it
    noise = "secret_key" if os.environ.get(SECRET_ENV) else "entropy"
    privacy = {"delta": delta, "allow_non_dp_baselines": False, "release_noise": noise,
               "dataset_epsilon": args.dataset_epsilon, "dataset_delta": args.dataset_delta,
               "neighbours": args.neighbours, "ledger": url, "new_population": args.new_population,
               "measured_table": MEASURED_TABLE, "release_round": getattr(args, "release_round", None)}
    config = {"mode": "release", "out": RUN, "engine": args.engine,
              "grid": {"datasets": [name], "epsilons": [args.epsilon], "seeds": [0], "sdgps": [args.sdgp],
                       "weights": [args.weights], "posts": [args.post], "exclude": []},
              "scale": {"public_fraction": 0, "out_of_bounds": args.out_of_bounds},
              "privacy": privacy}
    if args.sdgp == "mst":  # the flag, not a project's params.yaml, says which tree (the release's name holds it)
        config["sdgp"] = {"mst": {"tree": args.tree}}
    if args.weights == "marginal_match":
        from dpiw.weights.advisor import WEIGHTS_FRACTION

        privacy.update({"weights_epsilon_fraction": WEIGHTS_FRACTION, "weights_delta_fraction": WEIGHTS_FRACTION})
    return config


#: where a release keeps the identity it measured of its table (in its own folder, beside the private train split)
MEASURED_TABLE = "private/measured_table.json"


def _release_files(root: Path, data: Path, schema_path: Path, schema, config: dict) -> dict[str, bytes]:
    """The files of the release's own folder ({path in it: bytes}): a copy of the project's params.yaml, the schema
    pointing at DATA, the config (release.yaml)."""
    d = yaml.safe_load(schema_path.read_text())
    path = str(data) + ("/" if data.is_dir() else "")  # a folder of parquet files ends in '/'
    source = {"kind": "file", "path": path, **{k: v for k, v in schema.source.items() if k == "header"}}
    public = schema.source.get("public_path")
    if public:
        source["public_path"] = str((root / public).resolve()) if not Path(public).is_absolute() else public
    d["source"] = source
    return {"params.yaml": (root / "params.yaml").read_bytes(),
            f"data/schemas/{schema.name}.yaml": yaml.safe_dump(d, sort_keys=False).encode(),
            "release.yaml": _release_yaml(config)}


def _release_yaml(config: dict) -> bytes:
    return ("# written by `dpiw release`: this release's config (its folder is the workflow's working directory)\n"
            + yaml.safe_dump(config, sort_keys=False)).encode()


def _prepare(folder: Path, files: dict[str, bytes]) -> None:
    """The release's own folder, with its files (:func:`_release_files`)."""
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)


#: the stages that draw noise on the private rows (the others read none, or only what these released)
NOISY_STAGES = ("synthesize", "fit_weights")


def _noisy_tasks() -> list[tuple[str, dict, Path]] | None:
    """(stage, task, its cell record) of every run of a :data:`NOISY_STAGES` stage under the workflow config a
    release's folder holds (run/config.yaml; called with that folder as the working directory, as the workflow's
    paths are relative to it); None when there is no such config (the workflow never started there)."""
    from dpiw.planning import grid
    from dpiw.planning.config import load_yaml

    path = Path(RUN) / "config.yaml"
    if not path.is_file():
        return None
    config = load_yaml(path)
    out = grid.out_dir(config)
    tasks = []
    for cell in grid.cells(config):
        for stage in NOISY_STAGES:
            planned = grid.plan(config, stage, cell)
            done = Path(grid.fmt(grid.under(out, grid.CELL_DONE), **cell.keys(), stage=stage,
                                 digest=grid.cell_digest(planned)))
            tasks += [(stage, task, done) for task in planned]
    return tasks


def _spends(record: Path) -> bool:
    """Whether a stage's privacy record says it drew noise on the private rows (or read them without DP); what
    cannot be read is taken to say so."""
    from dpiw.privacy.spend import PrivacySpend

    try:
        r = PrivacySpend.read(record)
    except (DpiwError, OSError, ValueError):
        return True
    return not r.dp or bool(r.epsilon or r.delta or r.rdp)


def _ran_on_private_rows(folder: Path) -> str | None:
    """The stage of the run in ``folder`` that may have drawn noise on the private rows and written it out: one
    whose privacy record spends, or any of whose outputs exists (the synthetic rows, the weights); None when
    nothing of the kind is there. What cannot be read counts as having run."""
    from dpiw.privacy.spend import PrivacySpend

    for path in sorted((folder / RUN).rglob("privacy/*.json")):
        if _spends(path):
            try:
                return PrivacySpend.read(path).stage
            except (DpiwError, OSError, ValueError):
                return path.stem
    try:
        with contextlib.chdir(folder):
            tasks = _noisy_tasks()
            if tasks is None:  # no workflow config: anything under runs/ but the split's record counts
                found = [p for p in Path(RUN, "runs").rglob("*") if p.is_file() and p.name != "scale.json"]
                return "an unknown stage" if found else None
            return next((stage for stage, task, _ in tasks if any(Path(o).exists() for o in task["outputs"])),
                        None)
    except Exception:  # noqa: BLE001 - unreadable: the safe side
        return "an unknown stage"


def _drawn_again(folder: Path) -> str | None:
    """The stage whose output the killed run in ``folder`` wrote out and whose rerun would compute it again, with
    fresh noise (its cell job reruns a run unless its key, dpiw.stages.cell, is recorded and all its outputs are
    there; a run whose own privacy record is there and spends nothing draws no noise on the private rows); None
    when the rerun draws nothing that the killed run wrote out."""
    from dpiw.stages.cell import key_file, task_key

    try:
        with contextlib.chdir(folder):
            tasks = _noisy_tasks()
            if tasks is None:
                return _ran_on_private_rows(folder)
            for stage, task, done in tasks:
                present = [o for o in task["outputs"] if Path(o).exists()]
                if not present:
                    continue
                kept = key_file(done, stage, task["name"])
                if len(present) == len(task["outputs"]) and kept.is_file() and kept.read_text() == task_key(stage,
                                                                                                             task):
                    continue  # up to date: not run again
                record = next((o for o in present if "/privacy/" in o and o.endswith(".json")), None)
                if record is None or _spends(Path(record)):
                    return stage
    except Exception:  # noqa: BLE001 - unreadable: the safe side
        return "an unknown stage"
    return None


def _resumes(folder: Path, config: dict, files: dict[str, bytes]) -> str | None:
    """The reservation token of a killed run in ``folder`` that this run resumes and may keep: the same config
    (but its token), params.yaml and schema, and nothing the killed run drew on the private rows and wrote out is
    drawn again (:func:`_drawn_again`). None otherwise: this run then makes a reservation of its own and the killed
    run's stays charged."""
    path = folder / "release.yaml"
    try:
        old = yaml.safe_load(path.read_text()) if path.is_file() else None
    except (OSError, yaml.YAMLError):
        return None
    token = ((old or {}).get("privacy") or {}).get("reservation") if isinstance(old, dict) else None
    if not isinstance(token, str) or not token:
        return None

    def but_token(c: dict) -> dict:
        return {**c, "privacy": {k: v for k, v in (c.get("privacy") or {}).items() if k != "reservation"}}

    if but_token(old) != but_token(config) or any(
            not (folder / rel).is_file() or (folder / rel).read_bytes() != data
            for rel, data in files.items() if rel != "release.yaml"):
        return None
    stage = _drawn_again(folder)
    if stage:
        print(f"dpiw release: the interrupted run in {folder.name}/ wrote out its {stage} stage's output, which this "
              "run draws again: it is charged as a release of its own (the interrupted run stays charged)")
        return None
    return token


def _failed(store, folder: Path, token: str, started: bool = True) -> str:
    """Settle the reservation of a release whose workflow failed: cancelled when no stage drew noise on the private
    rows and wrote it out (:func:`_ran_on_private_rows`; none when the workflow never ``started``), else left
    charged. The words for its error."""
    from dpiw.privacy.ledger import cancel

    stage = _ran_on_private_rows(folder) if started else None
    if stage:
        return f"its planned spend stays charged to the table's ledger: its {stage} stage ran on the private rows"
    try:
        cancel(store, token=token, reason="the release failed before any stage drew noise on the private rows")
    except DpiwError as exc:
        return f"its planned spend stays charged to the table's ledger (its reservation could not be cancelled: {exc})"
    return "nothing ran on the private rows with noise, so nothing is charged (its reservation is cancelled)"


def _first_error(output: str, folder: Path) -> str:
    """The one line a stage raised (``error: ...``) in the failed jobs' logs or in Snakemake's own output."""
    logs = re.findall(r"^\s*log: (\S+)", output, flags=re.M)
    for text in [*((folder / log).read_text(errors="replace") for log in logs if (folder / log).is_file()), output]:
        lines = [line[len("error: "):].strip() for line in text.splitlines() if line.startswith("error: ")]
        if lines:
            return lines[-1]
    return "the workflow failed"


#: What a release's Snakemake gets as SLURM_CONF when none is set: a cluster whose controller refuses at once. A
#: release runs its jobs on this machine, but every Snakemake start imports snakemake-executor-plugin-slurm, which
#: (2.8.0) runs `scontrol show config` for one of its defaults; where SLURM is installed and its controller is down
#: or unreachable, that call waits 9 s (MessageTimeout), in every release.
LOCAL_SLURM_CONF = "ClusterName=dpiw-local\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=9\nMessageTimeout=1\n"


def _run_workflow(args, root: Path, folder: Path, log: Path, url: str, token: str | None = None) -> None:
    """Snakemake in the release's folder, its whole output in ``log``; DpiwError with the stage's one line.
    ``token``: the release's reservation, which its ledger stage may settle (dpiw.privacy.ledger.RESERVATION_ENV)."""
    from dpiw.commands.project import repository
    from dpiw.commands.snakemake_main import command
    from dpiw.privacy.ledger import RESERVATION_ENV

    env = {**os.environ, "DPIW_LEDGER_URL": url}
    env.pop(RESERVATION_ENV, None)  # only the token of this release's own reservation
    if token:
        env[RESERVATION_ENV] = token
    env.setdefault("DPIW_JAX_CACHE", str(root / ".cache" / "jax"))  # compiled once per project, not per release
    if "SLURM_CONF" not in env:
        conf = folder / ".snakemake" / "slurm-local.conf"  # beside Snakemake's own state
        conf.parent.mkdir(exist_ok=True)
        conf.write_text(LOCAL_SLURM_CONF)
        env["SLURM_CONF"] = str(conf)
    log.parent.mkdir(parents=True, exist_ok=True)
    # --nolock: this command's own lock guards the folder, and a killed release leaves no Snakemake lock behind;
    # --rerun-incomplete resumes it
    # Snakemake's command line whose rescheduling timers do not hold its exit (dpiw.commands.snakemake_main)
    cmd = [*command(), "--snakefile", str(repository() / "Snakefile"), "--directory", str(folder), "--cores",
           str(args.cores), "--configfile", str(folder / "release.yaml"), "--nolock", "--rerun-incomplete"]
    with open(log, "w") as fh:
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)
    if proc.returncode:
        output = log.read_text(errors="replace")
        with open(log, "a") as fh:  # the failed jobs' own logs, before the folder goes
            for job_log in re.findall(r"^\s*log: (\S+)", output, flags=re.M):
                if (folder / job_log).is_file():
                    fh.write(f"\n==> {job_log} <==\n{(folder / job_log).read_text(errors='replace')}")
        raise DpiwError(_first_error(output, folder))


def _admitted_before(args, root: Path, schema, url: str, table) -> Path | None:
    """The bundle of this very release (same table, choices and schema) if the ledger admitted it before, said on
    the terminal (nothing is spent); None when this command makes a release (``args.release``: its name, the
    first not admitted yet under --new-release)."""
    from dpiw.privacy.store import Store

    store = Store(url)
    name = schema.name
    base, legacy = release_name(args, table.key, schema), release_name(args, table.key)
    given = release_name(args, table.key, schema, as_given=True)  # a `fail` release named before it meant `clip`
    release, args.release_round, found = base, None, []
    for k in range(2, 10_000):  # --new-release: the first name of this command's releases not admitted yet
        folder = root / "releases" / name / release
        done = _admitted(folder, store) or _elsewhere(url, name, release)
        if not done and given != base:
            was = f"{given}{release[len(base):]}"
            done = _admitted(root / "releases" / name / was, store) or _elsewhere(url, name, was)
        if not done:  # a release named before the schema was in the name: the same one if its schema is this one
            old = f"{legacy}{release[len(base):]}"
            done = next((b for b in (_admitted(root / "releases" / name / old, store), _elsewhere(url, name, old))
                         if b and _same_schema(b, schema)), None)
        if not done and args.new_release and _refused_and_charged(folder):
            release, args.release_round = f"{base}.{k}", k  # a refused round, charged: the next one
            continue
        if not done:
            break
        found.append(done)
        release, args.release_round = f"{base}.{k}", k  # the round keys the noise: fresh under a secret key too
    if found and not args.new_release:  # the latest of them (--new-release made the later ones)
        done = found[-1]
        print(f"dpiw release: this release was admitted before; nothing is spent (--new-release releases "
              f"again)\nbundle     {os.path.relpath(done, args.origin)}/"
              + (f"  (the latest of its {len(found)} rounds)" if len(found) > 1 else ""))
        if not Path(done).resolve().is_relative_to(root.resolve()):  # a trial user read this as a bug: say why
            print(f"dpiw release: that bundle is another project's ({_project_of(Path(done), name)}): the privacy "
                  f"store keeps one ledger per table for every project on it, so the same rows, schema and flags are "
                  f"the same release wherever it is asked for")
        changed = params_changed(Path(done), root / "params.yaml")
        if changed:  # the flags and the schema name a release, the project's params do not: say so
            print(f"dpiw release: params.yaml changed since that release ({', '.join(changed)}); the bundle is "
                  "the earlier one: --new-release releases again under the new settings")
        return Path(done)
    args.release = release
    return None


def _project_of(bundle: Path, table: str) -> str:
    """The project folder of a bundle under PROJECT/releases/TABLE/ (its path as given where it is not)."""
    parts = bundle.resolve().parts
    at = [i for i in range(1, len(parts) - 1) if parts[i] == "releases" and parts[i + 1] == table]
    return str(Path(*parts[:at[-1]])) if at else str(bundle)


def _plan(args, root: Path, data: Path, schema, url: str, table, delta, n_rows) -> dict:
    """The weights (the advisor's pick under --weights auto) and the ledger's admission of this release's spend:
    refused here, before the release writes anything, when it would take the table past its lifetime budget; else
    charged to the ledger at once, as a reservation (dpiw.privacy.ledger.reserve), which the release's admission
    settles. A rerun of a killed release keeps the killed run's reservation when it draws nothing again that the
    killed run wrote out (:func:`_resumes`). Returns the plan with the reservation's token and the files of the
    release's folder (:func:`_prepare`)."""
    from dpiw.privacy.ledger import planned, reserve
    from dpiw.privacy.spend import run_delta
    from dpiw.privacy.store import Store

    if args.weights == "auto":
        args.weights = _advise(args, n_rows, Path(args.schema).resolve(), delta)
    if isinstance(delta, str) and args.neighbours != "replace_one":
        raise DpiwError("under add/remove neighbours --delta must be a number (it cannot be derived from the row "
                        "count, which is private)")
    d = run_delta(delta, n_rows, "replace_one") if args.neighbours == "replace_one" else float(delta)
    folder = root / "releases" / schema.name / args.release
    config = _config(args, schema.name, delta, url)
    files = _release_files(root, data, Path(args.schema).resolve(), schema, config)
    plan = reserve(Store(url), table=table, label=schema.name, mechanisms=planned(_planned(args, d), args.neighbours),
                   relation=args.neighbours, run_delta=d, epsilon=args.dataset_epsilon, delta=args.dataset_delta,
                   release=f"{schema.name}/{args.release}", folder=str(folder), resume=_resumes(folder, config, files))
    config["privacy"]["reservation"] = plan["token"]
    plan["files"] = {**files, "release.yaml": _release_yaml(config)}
    return plan


def _release(args, root: Path, data: Path, schema, url: str, table, delta, n_rows, plan: dict) -> None:
    from dpiw.privacy import witness
    from dpiw.privacy.ledger import also_charged, keep_measured, ledger_name
    from dpiw.privacy.store import Store

    store = Store(url)
    name, release = schema.name, args.release
    folder = root / "releases" / name / release
    if not plan["releases"]:  # the table's first release in this store (new, or its budget set just before)
        elsewhere_line(url, args.origin)
    interrupted = plan["interrupted"]
    print(f"dpiw release: admissible: table '{name}' would reach lifetime epsilon at most "
          f"{plan['after']['epsilon']:.4g} of {plan['budget']['epsilon']:g}"
          + (f" (counting {interrupted} earlier release(s) of it that were interrupted, or are still running: a "
             "release killed after it started is charged its planned spend)" if interrupted else "")
          + "".join(f", and the ledger of {ledger_name(o['labels'], o['key'])} {o['after']['epsilon']:.4g} of "
                    f"{o['budget']['epsilon']:g}" for o in plan.get("others", []))
          + f"; running it in {os.path.relpath(folder, args.origin)}/")
    if plan["resumed"]:
        print("dpiw release: resuming the interrupted run in that folder: the spend reserved when it started covers "
              "it (charged once)")
    log = root / "logs" / "releases" / name / f"{release}.log"
    try:
        _prepare(folder, plan["files"])
        # the identity measured above, for the ledger stage: its rows are not hashed a second time
        keep_measured(store, table, data, folder / MEASURED_TABLE)
    except OSError as exc:  # no workflow ran: nothing drew noise, so its reservation is cancelled
        said = _failed(store, folder, plan["token"], started=False)
        raise DpiwError(f"the release's folder {os.path.relpath(folder, args.origin)}/ could not be written "
                        f"({exc.strerror or exc}): {said}") from None
    try:
        _run_workflow(args, root, folder, log, url, plan["token"])
    except DpiwError as exc:  # nothing of this release stays but its log; no other release is touched
        said = _failed(store, folder, plan["token"])
        shutil.rmtree(folder, ignore_errors=True)
        raise DpiwError(f"{exc}; {said} (the release's log: {os.path.relpath(log, args.origin)})") from None
    except KeyboardInterrupt:  # Ctrl-C: the folder stays, so that the same command resumes it
        said = _failed(store, folder, plan["token"])
        raise DpiwError(f"interrupted: {said}; the same command resumes the release in "
                        f"{os.path.relpath(folder, args.origin)}/") from None
    except Exception:  # not a stage's error (the disk, the workflow's start): settled the same way, then raised
        _failed(store, folder, plan["token"])
        raise
    run_dir = _bundle_dir(folder, name, args)
    manifest = read_json(run_dir / "manifest.json")
    print("\n".join(describe(manifest)))
    for o in also_charged(store, table) if manifest["release"]["fit_to_release"] else []:
        left = o["budget"]["epsilon"] - o["lifetime"]["epsilon"]
        print(f"also       charged to the ledger of {ledger_name(o['labels'], o['key'])}, whose table's rows are in "
              f"this one: lifetime epsilon {o['lifetime']['epsilon']:.4g} of {o['budget']['epsilon']:g} "
              f"({max(left, 0):.4g} left)")
    print(delta_rule(delta, manifest["budget"]["delta"], n_rows))
    bundle = run_dir / "release"
    _crowded(bundle, schema)
    if manifest["release"]["fit_to_release"]:
        files = ", ".join(sorted(p.name for p in bundle.iterdir()))
        witness.record(url, manifest["ledger"]["entry"], bundle=str(bundle.resolve()), name=f"{name}/{release}")
        print(f"\nbundle     {os.path.relpath(bundle, args.origin)}/  ({files})\n"
              f"ledger     {_where(url, args.origin)}: keep it and back it up (never publish it); it counts every "
              "release of this table (`dpiw ledger show`)")
    else:
        print(f"\nno bundle to publish: {os.path.relpath(bundle, args.origin)}/ holds the reasons")
        raise refused(manifest)


def _crowded(bundle: Path, schema) -> None:
    """Warn of a numeric column most of whose rows the published fine histogram puts in one cell, or many in a
    cell over twice its neighbours, or some far out where its measurement does not tell them from noise, of a
    generator marginal that is mostly noise (DP outputs), and of the columns no marginal measured with the target
    (a trial's weeks off work, measured with medical costs alone: every estimate of it within a subgroup warned)."""
    from dpiw.analysis.bin_bias import crowded, crowded_text, far_rows, far_text, pile_lines

    if (bundle / "measurements.json").is_file():
        measurements = read_json(bundle / "measurements.json")
        for found in crowded(schema, measurements):
            print(f"dpiw release: {crowded_text(*found, column=schema.column(found[0]))}")
        for found in far_rows(schema, measurements):
            print(f"dpiw release: {far_text(*found, column=schema.column(found[0]))}")
        for line in pile_lines(schema, measurements).values():  # one line per column
            print(f"dpiw release: {line}")
        from dpiw.analysis.noisy import noisy_marginals, noisy_text

        noisy = noisy_marginals(measurements, schema)
        if noisy:  # the noisiest in words, the rest in a line
            print(f"dpiw release: {noisy_text(*noisy[0])}")
        if len(noisy) > 1:
            print("dpiw release: also under their noise: " + "; ".join(
                f"{' with '.join(map(repr, cols))} ({cells:,} cells, {snr:.2g} sds a cell)"
                for snr, cols, cells in noisy[1:]))
        from dpiw.analysis.bundle import indicator_of, measured_with, pairs_of

        if schema.target and pairs_of(measurements, indicator_of(schema)):  # marginals published (not a GAN's)
            # raw: a marginal of (x_missing, y) measures whether x is empty, not how x goes with y (b.fit's † too)
            partners, rest = measured_with(schema, measurements, schema.target, raw=True)
            if rest:
                print(f"dpiw release: the target '{schema.target}' was measured together with "
                      f"{', '.join(partners) or 'no column'}, not with {', '.join(rest)}: an estimate of it within "
                      "their subgroups, or a fit of it on them, shows the generator's model of that relation, which "
                      "no interval covers (the estimate warns); MST's `--tree target` measures every column with the "
                      "target")


def refused(manifest: dict) -> DpiwError:
    """The error of a release the gate refused (a non-zero exit: a script's next step, publishing, must not run)."""
    charged = (manifest.get("ledger") or {}).get("lifetime")
    said = (f"its spend is charged to the table's ledger all the same (lifetime epsilon now {charged['epsilon']:.4g}"
            "): its mechanisms ran on the private rows, and trying again until a release passes would choose among "
            "noisy releases, which costs each" if charged else "nothing is charged to the ledger")
    return DpiwError("NOT fit to release (" + "; ".join(manifest["release"]["reasons"]) + f"): nothing is published "
                     f"and {said}; the same command gives the same verdict (its noise is drawn once): "
                     "--new-release draws fresh noise (charged again), or change the release (another --weights or "
                     "--post, say)")
