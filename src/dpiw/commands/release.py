"""Release DP synthetic data and DP importance weights of your own table, in one command (release mode).

Every row of DATA is private. In the project folder (--project, default the current directory; created on
first use) dpiw copies your schema to data/schemas/<name>.yaml (pointing at DATA), writes the run's config to
configs/release_<name>.yaml (rerun it with Snakemake or edit it later), runs the workflow, and prints where the
bundle is and what it spent. The noise comes from fresh OS entropy, so two
releases never share it. Every bundle is first admitted to the table's lifetime ledger
(ledgers/ledger.sqlite, or $DPIW_LEDGER_URL), found by the table's content whatever its name; its budget is
set when the first release creates it and a release that would pass it is refused. One release of a
dataset runs at a time; a release that was killed resumes when the same command is run again.

    dpiw release data/examples/clinic.csv --schema data/schemas/clinic.yaml --epsilon 1
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import yaml

from dpiw import DpiwError, registry
from dpiw.commands.project import add_argument as add_project_argument
from dpiw.commands.run import snakemake
from dpiw.commands.show import describe
from dpiw.io import read_json
from dpiw.privacy.neighbours import NEIGHBOURS

#: the first line of every config this command writes (it overwrites only its own)
MARK = "# written by `dpiw release`"
#: the weight methods a release can use: DP, and not the toy data's oracle (`true`)
RELEASABLE_WEIGHTS = tuple(w for w in registry.weight_names(dp=True)
                           if registry.weight_method(w).applies_to != "toy_uniform")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", metavar="DATA", help="your private table: a CSV with a header, or a parquet file")
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
    p.add_argument("--post", default="none",
                   help="the post-processing chain, steps joined with '+' (default none; e.g. psis for the logistic "
                        "weights, temper+psis); steps: " + ", ".join(registry.POST_STEPS))
    p.add_argument("--dataset-epsilon", type=float,
                   help="the table's lifetime epsilon, over all its releases: set when its ledger is created "
                        "(default 10, printed); afterwards it must be the stored one (change it with `dpiw ledger "
                        "set-budget`)")
    p.add_argument("--dataset-delta", type=float,
                   help="the table's lifetime delta, fixed when its ledger is created (default: this release's delta)")
    p.add_argument("--ledger", help="the ledger store: a SQLite path or a postgresql:// URL (default "
                                    "$DPIW_LEDGER_URL, else ledgers/ledger.sqlite)")
    p.add_argument("--neighbours", choices=NEIGHBOURS, default="replace_one",
                   help="replace_one (the row count is public) or add_remove (it is private; needs a numeric "
                        "--delta)")
    p.add_argument("--cores", default="all", help="CPU cores for the workflow's jobs")
    add_project_argument(p)


def _schema_for(data: Path, schema_path: Path, root: Path) -> str:
    """Put the schema where the workflow finds it, pointing at ``data``; return the dataset's name."""
    from dpiw.data.schema import load_schema

    load_schema(schema_path)  # every field checked, with the field named in the error
    d = yaml.safe_load(schema_path.read_text())
    name = d["name"]
    try:
        rel = data.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = str(data.resolve())
    d["source"] = {**{k: v for k, v in (d.get("source") or {}).items() if k == "public_path"},
                   "kind": "file", "path": rel}
    target = root / "data/schemas" / f"{name}.yaml"
    if target.resolve() == schema_path.resolve():
        if (yaml.safe_load(target.read_text()).get("source") or {}).get("path") != rel:
            raise DpiwError(f"{schema_path}: its source.path does not name {data}; set source: {{kind: file, path: "
                            f"{rel}}} in it")
        return name
    text = f"{MARK} from {schema_path}\n" + yaml.safe_dump(d, sort_keys=False)
    if target.exists() and not target.read_text().startswith(MARK) and target.read_text() != text:
        raise DpiwError(f"data/schemas/{name}.yaml already holds another schema named '{name}': give yours another "
                        "name (its `name:` field) or pass that file as --schema")
    target.write_text(text)
    return name


def _advise(args, n_rows: int, schema_path: Path, delta) -> str:
    """The budget advisor's pick (dpiw.weights.advisor), printed with its reason. It reads the row count, which
    is public under replace-one neighbours only."""
    from dpiw.data.schema import load_schema
    from dpiw.privacy.spend import run_delta
    from dpiw.weights.advisor import WEIGHTS_FRACTION, advise

    if args.neighbours != "replace_one":
        raise DpiwError("--weights auto reads the row count, which is private under add/remove neighbours: name the "
                        "weight method (--weights marginal_match, or none)")
    if args.sdgp != "mst":
        raise DpiwError(f"--weights auto advises after mst only; with --sdgp {args.sdgp} name the weight method")
    schema = load_schema(schema_path)
    advice = advise(n_rows, schema, epsilon=args.epsilon, delta=run_delta(delta, n_rows, "replace_one"),
                    fraction=WEIGHTS_FRACTION)
    print(f"dpiw release: weights {advice.method}: {advice.reason}")
    return advice.method


def _check_choices(args) -> None:
    """The post chain parses and the weight method applies to the SDGP, before anything runs."""
    from dpiw.postprocess import parse_post

    try:
        parse_post(args.post)
    except DpiwError as exc:
        raise DpiwError(f"--post: {exc}") from None
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
    if registry.sdgp(args.sdgp).zcdp:  # the marginal SDGPs' domain guard, before any row is read
        from dpiw.config import load_yaml
        from dpiw.sdgp import make_sdgp

        make_sdgp(args.sdgp, **load_yaml(params)["sdgp"][args.sdgp]).check_domain(schema)
    if args.neighbours != "replace_one":
        return None
    n_rows = count_rows(schema, str(data))  # a chunk at a time: the table may be larger than memory
    run_delta(delta, n_rows, "replace_one")  # refuses a delta of 1/N_D or more, naming --delta's fix
    return n_rows


@contextmanager
def one_release_at_a_time(root: Path, name: str):
    """Hold the dataset's release lock (released by the OS if the process dies), or refuse with one line."""
    lock = root / "results" / f"release_{name}" / ".dpiw-release.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            raise DpiwError(f"another `dpiw release` of '{name}' is running ({fh.read().strip() or 'pid unknown'}): "
                            "wait for it to end, then run this one again") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}")
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def main(args) -> None:
    from dpiw.commands.project import enter, project_params
    from dpiw.grid import eps_str

    data, schema_path = Path(args.data), Path(args.schema)
    for flag, path in (("DATA", data), ("--schema", schema_path)):
        if not path.is_file():
            raise DpiwError(f"{flag} {path}: no such file")
    data, schema_path, args.origin = data.resolve(), schema_path.resolve(), Path.cwd()
    if not (args.epsilon > 0):
        raise DpiwError(f"--epsilon must be positive, got {args.epsilon}")
    try:
        delta = args.delta if args.delta in ("paper", "auto") else float(args.delta)
    except ValueError:
        raise DpiwError(f"--delta must be 'auto', 'paper' or a number, got {args.delta!r}") from None
    _check_choices(args)
    n_rows = _preflight(args, data, schema_path, delta, project_params(args.project))
    root = enter(args.project)  # the project folder (created now): what follows reads and writes there
    from dpiw.data.schema import load_schema

    with one_release_at_a_time(root, load_schema(schema_path).name):
        name = _schema_for(data, schema_path, root)
        _release(args, root, data, schema_path, name, delta, n_rows, eps_str)


def earlier_bundles_in_the_ledger(root: Path, name: str, url: str) -> int:
    """Refuse to release while the bundles this command wrote before are not in the ledger store (a deleted,
    replaced or rewritten store would otherwise start the table again at zero). Returns how many were checked."""
    from dpiw.privacy.ledger import bundle_entry, verify
    from dpiw.privacy.store import Store, describe

    runs = root / "results" / f"release_{name}" / "runs"
    entries = {os.path.relpath(m.parent, root): bundle_entry(m) for m in sorted(runs.glob("**/release/manifest.json"))}
    entries = {bundle: entry for bundle, entry in entries.items() if entry}
    if entries:
        try:
            verify(Store(url, create=False), entries=entries)
        except DpiwError as exc:
            raise DpiwError(f"{len(entries)} earlier bundle(s) of '{name}' were admitted to a ledger that "
                            f"{describe(url)} does not hold ({exc}); restore the store from its backup, or point "
                            "--ledger / DPIW_LEDGER_URL at it") from None
    return len(entries)


def delta_rule(delta, value: float, n_rows: int | None) -> str:
    """Which rule set the release's delta, in words."""
    rows = f"N_D = {n_rows:,} rows" if n_rows else "the row count"
    rule = {"auto": f"--delta auto: N_D^-1.5 with {rows}, well below 1/N_D",
            "paper": f"--delta paper: 1/N_D - 1e-6 with {rows} (the paper's rule)"}.get(delta, "--delta, as given")
    return f"delta      {value:.3g}, set by {rule}"


def _release(args, root: Path, data: Path, schema_path: Path, name: str, delta, n_rows, eps_str) -> None:
    from dpiw.config import load_yaml
    from dpiw.privacy.store import store_url

    url = store_url(args.ledger or load_yaml(root / "params.yaml")["privacy"].get("ledger"))
    earlier_bundles_in_the_ledger(root, name, url)
    if args.weights == "auto":
        args.weights = _advise(args, n_rows, schema_path, delta)
    privacy = {"delta": delta, "allow_non_dp_baselines": False, "release_noise": "entropy",
               "dataset_epsilon": args.dataset_epsilon, "dataset_delta": args.dataset_delta,
               "neighbours": args.neighbours}
    if args.ledger:
        privacy["ledger"] = args.ledger
    config = {"mode": "release",
              "grid": {"datasets": [name], "epsilons": [args.epsilon], "seeds": [0], "sdgps": [args.sdgp],
                       "weights": [args.weights], "posts": [args.post], "exclude": []},
              "scale": {"public_fraction": 0, "out_of_bounds": "fail"},
              "privacy": privacy}
    if args.weights == "marginal_match":
        from dpiw.weights.advisor import WEIGHTS_FRACTION

        config["privacy"].update({"weights_epsilon_fraction": WEIGHTS_FRACTION,
                                  "weights_delta_fraction": WEIGHTS_FRACTION})
    path = root / "configs" / f"release_{name}.yaml"
    if path.exists() and not path.read_text().startswith(MARK):
        raise DpiwError(f"{path.relative_to(root)} exists and was not written by `dpiw release`: move it away")
    before = path.read_text() if path.exists() else None
    path.write_text(f"{MARK}; rerun: snakemake --cores all --configfile configs/release_{name}.yaml\n"
                    + yaml.safe_dump(config, sort_keys=False))
    # --nolock: this command's own lock (one release of a dataset at a time) guards the outputs, and a
    # killed release leaves no Snakemake lock behind; --rerun-incomplete resumes it
    try:
        snakemake(["--cores", str(args.cores), "--configfile", str(path.relative_to(root)), "--nolock",
                   "--rerun-incomplete"])
    except DpiwError:
        # a failed release leaves no private split behind (a rerun draws fresh noise anyway), and its config is
        # put back as it was
        shutil.rmtree(root / "results" / f"release_{name}" / "private", ignore_errors=True)
        path.write_text(before) if before is not None else path.unlink(missing_ok=True)
        raise
    run_dir = (root / "results" / f"release_{name}" / "runs" / name / f"eps={eps_str(args.epsilon)}" / "seed=0"
               / args.sdgp / args.weights / args.post)
    manifest = read_json(run_dir / "manifest.json")
    print("\n".join(describe(manifest)))
    print(delta_rule(delta, manifest["budget"]["delta"], n_rows))
    bundle = run_dir / "release"
    if manifest["release"]["fit_to_release"]:
        from dpiw.privacy.store import describe as where

        files = ", ".join(sorted(p.name for p in bundle.iterdir()))
        store = where(url) if "://" in url else os.path.relpath(root / url, args.origin)
        print(f"\nbundle     {os.path.relpath(bundle, args.origin)}/  ({files})\n"
              f"ledger     {store}: keep it and back it up (never publish it); it counts every release of this "
              "table (`dpiw ledger show`)")
    else:
        print(f"\nno bundle to publish: {os.path.relpath(bundle, args.origin)}/ holds the reasons")
