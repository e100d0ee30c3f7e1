"""The cell job (dpiw.stages.cell): every run of a cell in one process, with the same bytes as one process
per run; a run is recomputed exactly when its flags or the bytes of an input changed; an interrupted cell
resumes; bad input is one line."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from dpiw import DpiwError
from dpiw.planning import grid
from dpiw.stages import cell, scale

CELL = "toy/eps=1/marginals"


@pytest.fixture
def cfg(tmp_path, root, monkeypatch):
    """A one-cell config (toy, marginals, three weight methods, two posts, seeds 0 and 1) and its scaled
    data, in a work dir laid out like the workflow's."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").symlink_to(root / "data")
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["grid"] = {"datasets": ["toy"], "epsilons": [1], "seeds": [0, 1], "sdgps": ["marginals"],
                      "weights": ["none", "beta_debiased", "output_laplace"], "posts": ["none", "temper"]}
    params["datasets"]["toy"]["n_rows"] = 300
    params["out"] = "results/t"
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(params))
    out = "results/t"
    for seed in (0, 1):
        p = {k: grid.fmt(grid.under(out, t), dataset="toy", seed=seed)
             for k, t in (("train", grid.TRAIN), ("test", grid.TEST), ("public", grid.PUBLIC),
                          ("privacy", grid.SCALE_PRIVACY))}
        scale.main(["--schema", "data/schemas/toy.yaml", *grid.scale_args(params, grid.lookup_in(params),
                                                                          dataset="toy", seed=seed),
                    "--train-out", p["train"], "--test-out", p["test"], "--public-out", p["public"],
                    "--privacy-out", p["privacy"]])
    return path


def both_seeds(*names):
    """A cell's task names, seed by seed."""
    return [f"seed={s}/{n}" for s in (0, 1) for n in names]


def done(stage, digest=None):
    """The cell job's record; the workflow names it by the digest of the cell's runs."""
    name = f"{stage}.{digest}.done.json" if digest else f"{stage}.done.json"
    return os.path.dirname(grid.fmt(grid.under("results/t", grid.CELL_DONE), **grid.parse_cell(CELL).keys(),
                                     stage=stage, digest="x")) + "/" + name


def run_stage(cfg, stage, capsys):
    capsys.readouterr()
    cell.main(["--stage", stage, "--config", str(cfg), "--cell", CELL, "--done", done(stage)])
    return capsys.readouterr().out


def computed(out: str) -> list[str]:
    return [line.split(" ", 2)[2] for line in out.splitlines() if line.startswith("[") and "up to date" not in line]


def test_a_cell_runs_each_run_once_and_then_only_what_an_edit_reaches(cfg, capsys):
    assert computed(run_stage(cfg, "synthesize", capsys)) == both_seeds("full", "split")
    assert computed(run_stage(cfg, "fit_weights", capsys)) == both_seeds("none", "beta_debiased", "output_laplace")
    assert len(computed(run_stage(cfg, "postprocess_weights", capsys))) == 12
    record = json.loads(open(done("fit_weights")).read())
    outputs = [o for r in record["runs"].values() for o in r["outputs"]]
    stamp = {o: os.stat(o).st_mtime_ns for o in outputs}
    # nothing changed: nothing is recomputed, nothing rewritten
    assert computed(run_stage(cfg, "fit_weights", capsys)) == []
    assert {o: os.stat(o).st_mtime_ns for o in outputs} == stamp
    # an edited parameter of one method: that method's run alone, then its post-processing alone
    params = yaml.safe_load(cfg.read_text())
    params["weights"]["output"]["scale_target"] = 0.4
    cfg.write_text(yaml.safe_dump(params))
    assert computed(run_stage(cfg, "fit_weights", capsys)) == both_seeds("output_laplace")
    assert computed(run_stage(cfg, "postprocess_weights", capsys)) == both_seeds("output_laplace/none",
                                                                                "output_laplace/temper")
    assert {o: os.stat(o).st_mtime_ns for o in outputs if "/output_laplace/" not in o} == {
        o: t for o, t in stamp.items() if "/output_laplace/" not in o}
    # a lost output of one seed: that run alone
    synth = grid.fmt(grid.under("results/t", grid.SYNTH), **grid.parse_cell(CELL).keys(), seed=1, share="split")
    os.remove(synth)
    assert computed(run_stage(cfg, "synthesize", capsys)) == ["seed=1/split"]
    # a changed input (new synthetic rows): every run that reads them
    params["sdgp"]["marginals"]["bins"] = 7
    cfg.write_text(yaml.safe_dump(params))
    assert computed(run_stage(cfg, "synthesize", capsys)) == both_seeds("full", "split")
    assert computed(run_stage(cfg, "fit_weights", capsys)) == both_seeds("none", "beta_debiased", "output_laplace")


def test_one_process_gives_the_bytes_of_one_process_per_run(cfg, capsys, tmp_path):
    run_stage(cfg, "synthesize", capsys)
    run_stage(cfg, "fit_weights", capsys)
    tasks = cell.load_tasks(str(cfg), "fit_weights", CELL)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    for task in tasks:
        together = {o: open(o, "rb").read() for o in task["outputs"]}
        alone = [a if a not in task["outputs"] else str(tmp_path / "alone" / os.path.basename(a)) for a in task["argv"]]
        subprocess.run([sys.executable, "-m", "dpiw.stages.fit_weights", *alone], check=True, env=env,
                       capture_output=True)
        for o, data in together.items():
            assert open(tmp_path / "alone" / os.path.basename(o), "rb").read() == data, (task["name"], o)


def test_an_interrupted_cell_resumes_where_it_stopped(cfg, capsys, monkeypatch):
    run_stage(cfg, "synthesize", capsys)
    from dpiw.stages import fit_weights

    real = fit_weights.main

    def fail_on_output_laplace(argv):
        if "output_laplace" in argv and argv[argv.index("--seed") + 1] == "1":
            raise KeyboardInterrupt  # a kill in the middle of the cell's last seed
        real(argv)

    monkeypatch.setattr(fit_weights, "main", fail_on_output_laplace)
    with pytest.raises(KeyboardInterrupt):
        run_stage(cfg, "fit_weights", capsys)
    assert not os.path.exists(done("fit_weights"))  # the scheduler will run the cell again
    monkeypatch.setattr(fit_weights, "main", real)
    assert computed(run_stage(cfg, "fit_weights", capsys)) == ["seed=1/output_laplace"]


@pytest.mark.parametrize("args, message", [
    (["--cell", "toy/eps=1/seed=0/marginals"], "--cell: not a cell id"),
    (["--cell", "toy/eps=6/marginals"], "not a cell of the grid"),
    (["--stage", "scale"], "invalid choice: 'scale'"),
])
def test_bad_cell_arguments_are_one_line(cfg, args, message):
    argv = {"--stage": "fit_weights", "--config": str(cfg), "--cell": CELL, "--done": "x.json"}
    argv.update(dict(zip(args[::2], args[1::2], strict=True)))
    proc = subprocess.run([sys.executable, "-m", "dpiw.stages.cell", *[x for kv in argv.items() for x in kv]],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not os.path.exists("x.json")


def test_a_failing_run_names_its_cell_stage_and_run(cfg, capsys):
    run_stage(cfg, "synthesize", capsys)
    params = yaml.safe_load(cfg.read_text())
    params["weights"]["output"]["scale_target"] = 0.5  # refused by output_laplace (infinite variance)
    cfg.write_text(yaml.safe_dump(params))
    proc = subprocess.run([sys.executable, "-m", "dpiw.stages.cell", "--stage", "fit_weights", "--config",
                           str(cfg), "--cell", CELL, "--done", done("fit_weights")], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("error: fit_weights seed=0/output_laplace: "), proc.stderr
    assert not os.path.exists(done("fit_weights"))


def test_the_record_is_named_by_the_runs_digest_and_replaces_older_ones(cfg, capsys):
    run_stage(cfg, "synthesize", capsys)
    digest = grid.cell_digest(cell.load_tasks(str(cfg), "fit_weights", CELL))
    cell.main(["--stage", "fit_weights", "--config", str(cfg), "--cell", CELL, "--done", done("fit_weights", digest)])
    assert os.path.exists(done("fit_weights", digest))
    params = yaml.safe_load(cfg.read_text())
    params["weights"]["output"]["scale_target"] = 0.4
    cfg.write_text(yaml.safe_dump(params))
    # a name from the old config: refused (the workflow planned other runs than the config now holds)
    with pytest.raises(DpiwError, match="defines other runs for this cell"):
        cell.main(["--stage", "fit_weights", "--config", str(cfg), "--cell", CELL, "--done",
                   done("fit_weights", digest)])
    new = grid.cell_digest(cell.load_tasks(str(cfg), "fit_weights", CELL))
    cell.main(["--stage", "fit_weights", "--config", str(cfg), "--cell", CELL, "--done", done("fit_weights", new)])
    assert os.path.exists(done("fit_weights", new)) and not os.path.exists(done("fit_weights", digest))


def test_edited_code_recomputes_every_run_and_renames_the_record(cfg, capsys, monkeypatch):
    run_stage(cfg, "synthesize", capsys)
    tasks = cell.load_tasks(str(cfg), "synthesize", CELL)
    before = grid.cell_digest(tasks)
    monkeypatch.setattr(grid, "code_digest", lambda: "another version of dpiw")
    assert grid.cell_digest(tasks) != before
    assert computed(run_stage(cfg, "synthesize", capsys)) == both_seeds("full", "split")
