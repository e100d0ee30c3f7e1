"""A curator releases from a folder of their own (`--project`), never writing into the dpiw checkout, and an
analyst reads the published bundle somewhere else, in the table's units and labels."""

import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest
from helpers import sh

from dpiw import DpiwError


def _status(root) -> str:
    return sh(["git", "status", "--porcelain", "--untracked-files=all"], root).stdout


def test_a_release_outside_the_checkout_reads_back_in_years_and_labels(tmp_path, root):
    before = _status(root)
    curator = tmp_path / "curator"
    curator.mkdir()
    shutil.copy(root / "data/examples/clinic.csv", curator / "clinic.csv")
    shutil.copy(root / "data/schemas/clinic.yaml", curator / "clinic.yaml")
    env = {**os.environ, "DPIW_SECRET_KEY": "tests/pipeline/test_project.py"}  # a failure comes back on its commit
    proc = sh(["dpiw", "release", "clinic.csv", "--schema", "clinic.yaml", "--epsilon", "1", "--cores", "1",
               "--project", "releases"], curator, env=env)
    assert "a new project in" in proc.stdout and "FIT TO RELEASE" in proc.stdout
    project = curator / "releases"
    assert {p.name for p in project.iterdir()} >= {"params.yaml", "configs", "data", "releases", "logs"}
    (folder,) = (project / "releases/clinic").iterdir()  # the release's own folder: config, schema, bundle
    assert (folder / "release.yaml").is_file() and not (project / "ledgers").exists()  # the store is the user's
    bundle = folder / "run/runs/clinic/eps=1/seed=0/mst/none/none/release"
    assert f"bundle     releases/{bundle.relative_to(project)}/" in proc.stdout
    assert _status(root) == before  # nothing of the checkout was written
    # a second release of the same table from the same project draws on the same ledger
    proc = sh(["dpiw", "release", "clinic.csv", "--schema", "clinic.yaml", "--epsilon", "0.5", "--cores", "1",
               "--project", "releases"], curator, env=env)
    assert "over 2 release(s) of this table" in proc.stdout and "a new project" not in proc.stdout
    # the analyst has the published folder only, in a folder of their own
    analyst = tmp_path / "analyst"
    shutil.copytree(bundle, analyst / "bundle")
    code = ("from dpiw.analysis import load_bundle\n"
            "b = load_bundle('bundle')\n"
            "print(b.mean('age').value, b.mean('bmi').value)\n"
            "print(sorted(set(b.data['outcome'].astype(str))), b.data['outcome'].iloc[0].__class__.__name__)\n"
            "print(b.rate('outcome', 'ill').value)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=analyst, capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    age, bmi = map(float, lines[0].split())
    real = pd.read_csv(root / "data/examples/clinic.csv")
    # years and kg/m2, not the [0, 1] scale (how close they come is noise at 400 rows: bmi 32.7 against 27.1 once;
    # 14 clinic releases at epsilon 1 put the mean age -3.5 to +4.7 years off, sd 2.4, so 15 is about 6 sd)
    assert 18 <= age <= 90 and abs(age - real.age.mean()) < 15 and 12 <= bmi <= 60, (age, bmi)
    assert lines[1] == "['healthy', 'ill'] str"
    assert 0 < float(lines[2]) < 1


def test_a_corrected_schema_is_a_new_release_and_an_unchanged_one_finds_its_bundle(tmp_path, root, monkeypatch,
                                                                                    capsys):
    """The schema's public part names the release: a corrected bound releases again (and spends), the same schema
    finds its bundle, also one named as dpiw named releases before the schema was part of the name."""
    import json

    import yaml

    import dpiw.commands.release as release
    from dpiw.commands import main

    curator = tmp_path / "curator"
    curator.mkdir()
    shutil.copy(root / "data/examples/clinic.csv", curator / "clinic.csv")
    shutil.copy(root / "data/schemas/clinic.yaml", curator / "clinic.yaml")
    monkeypatch.chdir(curator)
    monkeypatch.setenv("DPIW_HOME", str(tmp_path / "home"))  # a ledger of its own: the module's holds clinic too
    argv = ["release", str(curator / "clinic.csv"), "--schema", str(curator / "clinic.yaml"), "--epsilon", "1",
            "--cores", "1", "--project", str(curator / "p")]  # absolute: the command changes into the project
    named = release.release_name
    monkeypatch.setattr(release, "release_name", lambda args, key, schema=None, **kw: named(args, key))  # the old name
    main(argv)
    monkeypatch.setattr(release, "release_name", named)
    capsys.readouterr()
    main(argv)
    out = capsys.readouterr().out
    assert "this release was admitted before; nothing is spent" in out and "params.yaml changed" not in out
    assert "another project" not in out
    main([*argv, "--out-of-bounds", "fail"])  # only a check: the rows pass it, so it is the same release
    assert "this release was admitted before; nothing is spent" in capsys.readouterr().out
    spec = yaml.safe_load((curator / "clinic.yaml").read_text())
    spec["columns"] = [dict(c, upper=70) if c["name"] == "bmi" else c for c in spec["columns"]]
    (curator / "clinic.yaml").write_text(yaml.safe_dump(spec))
    main(argv)
    out = capsys.readouterr().out
    assert "admitted before" not in out and "over 2 release(s) of this table" in out, out
    uppers = sorted(next(c["upper"] for c in json.loads(s.read_text())["schema"]["columns"] if c["name"] == "bmi")
                    for s in (curator / "p/releases/clinic").glob("*/run/runs/**/release/schema.json"))
    assert uppers == [60, 70]
    main(argv)  # the corrected schema again: its own bundle, nothing spent
    assert "this release was admitted before; nothing is spent" in capsys.readouterr().out
    main([*argv[:-1], str(curator / "q")])  # from another folder: the same bundle, and no project left there
    out = capsys.readouterr().out
    assert "admitted before" in out and "new project" not in out and not (curator / "q").exists()
    assert f"that bundle is another project's ({(curator / 'p').resolve()}): the privacy store keeps" in out, out
    params = yaml.safe_load((curator / "p/params.yaml").read_text())
    params["sdgp"]["mst"]["bins"] = 16
    (curator / "p/params.yaml").write_text(yaml.safe_dump(params))
    main(argv)  # the project's settings are not in the name: the earlier bundle, and the change said
    out = capsys.readouterr().out
    assert "admitted before" in out and "params.yaml changed since that release (sdgp.mst.bins: 8 → 16)" in out
    with pytest.raises(DpiwError, match="lifetime"):  # past the lifetime budget, from a new folder: nothing left
        main([*argv[:5], "20", *argv[6:-1], str(curator / "r")])
    assert "new project" not in capsys.readouterr().out and not (curator / "r").exists()
