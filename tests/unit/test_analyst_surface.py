"""What an analyst reads and writes from a bundle: an estimate printed in words, a fitted model's coefficients with
intervals (checked by coverage against the coefficients of the population the rows come from), an export that
reads back, labels declared as numbers staying numbers, a subgroup label that is not a category refused, and
integer columns as integers."""

import json
import os
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso, LinearRegression, LogisticRegression

from dpiw import DpiwError
from dpiw.analysis import Estimate, load_bundle
from dpiw.analysis.fit import Fit
from dpiw.data.schema import parse_schema

SCHEMA = {"name": "t", "task": "regression", "target": "y", "columns": [
    {"name": "x", "type": "numeric", "lower": 0, "upper": 10},
    {"name": "n", "type": "numeric", "lower": 0, "upper": 100, "integer": True},
    {"name": "g", "type": "categorical", "categories": [0, 1]},
    {"name": "y", "type": "numeric", "lower": -50, "upper": 50}]}


def write_bundle(folder, n=2000, seed=0, weights=None):
    """A bundle of rows from a known linear population y = 1 + 2 x - 3 g + e (no generator: the rows are the
    population's own draws, so a 95% interval must cover the population's coefficients 95% of the time)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    x = rng.uniform(0, 10, n)
    g = rng.integers(0, 2, n)
    y = 1 + 2 * x - 3 * g + rng.normal(0, 2, n)
    nint = rng.integers(0, 101, n)
    scaled = pd.DataFrame({"x": x / 10, "n": nint / 100, "g": g, "y": (y + 50) / 100})
    scaled.to_parquet(folder / "synthetic.parquet")
    w = np.ones(n) if weights is None else weights
    pd.DataFrame({"log_weight": np.log(w), "weight": w}).to_parquet(folder / "weights.parquet")
    (folder / "manifest.json").write_text(json.dumps({"release": {}}))
    (folder / "schema.json").write_text(json.dumps({"schema": parse_schema(SCHEMA).public_dict()}))
    return folder


def test_an_estimate_prints_as_a_sentence():
    assert str(Estimate(65.54, 0.21, 100)) == "65.5 (95% interval 65.1 to 66.0)"
    assert str(Estimate(0.2345, 0.0123, 10)) == "0.234 (95% interval 0.210 to 0.259)"  # half-width 0.024: two
    assert str(Estimate(2.5887, 0.52, 10)) == "2.6 (95% interval 1.6 to 3.6)"  # not "3 (2 to 4)"
    assert str(Estimate(5.0, 0.4949, 10)) == "5.0 (95% interval 4.0 to 6.0)"  # 0.97 rounds to 1.0
    assert str(Estimate(-0.0004, 0.05, 10)) == "0.00 (95% interval -0.10 to 0.10)"  # no "-0.00"
    table = pd.DataFrame({"value": [0.1184, -4.56, -0.001], "lo": [-0.02826, -5.18, -0.17], "hi": [0.41, -4.02, 0.18]},
                         index=["sex=M", "(intercept)", "plan=b"])
    lines = [ln.split() for ln in str(Fit(None, table, "x")).splitlines()[1:4]]
    assert lines == [["sex=M", "0.12", "-0.03", "to", "0.41"], ["(intercept)", "-4.6", "-5.2", "to", "-4.0"],
                     ["plan=b", "0.00", "-0.17", "to", "0.18"]]


def test_numbers_stay_numbers_and_labels_are_checked(tmp_path):
    b = load_bundle(write_bundle(tmp_path / "b"))
    assert list(b.data.g.cat.categories) == [0, 1]  # declared [0, 1]: still numbers
    assert b.data.n.dtype.kind == "i" and b.data.n.between(0, 100).all()
    assert b.rate("g", 1).value == pytest.approx((b.data.g == 1).mean())
    with pytest.raises(DpiwError, match="'yes' is not a category of 'g'"):
        b.mean("x", where={"g": "yes"})
    with pytest.raises(DpiwError, match="rate: 'x' is numeric.*b.mean"):  # not a share of 0 with no width
        b.rate("x", 1.0)
    with pytest.raises(DpiwError, match=r"True is not a category of 'g'.*\(the category is 1, a number: write 1"):
        b.mean("x", where={"g": True})  # True == 1, but not a label: the number it stands for is said
    with pytest.raises(DpiwError, match="rate: True is not a category of 'g'"):  # in a rate too
        b.rate("g", True)
    # the schema's [0, 1] are numbers: "1" is said to be text for the number 1, in a subgroup and in a rate
    with pytest.raises(DpiwError, match=r"'1' is not a category of 'g'; its categories are \[0, 1\] \(the category "
                                        r"is 1, a number: write 1, as the schema lists it\)"):
        b.mean("x", where={"g": "1"})
    with pytest.raises(DpiwError, match="rate: '0' is not a category of 'g'.*the category is 0, a number: write 0"):
        b.rate("g", "0")
    with pytest.raises(DpiwError, match="'x' is numeric; a mapping picks categories.*lambda d: d\\['x'\\] > 3"):
        b.mean("y", where={"x": 3.0})  # no row holds exactly 3.0: not "no synthetic row in this subgroup"
    assert b.mean("y", where={"n": [10, 11]}).value == pytest.approx(b.data.y[b.data.n.isin([10, 11])].mean())
    from sklearn.linear_model import LinearRegression

    with _no_warning():  # a misspelt column: its error, no warning first
        with pytest.raises(DpiwError, match="no column 'gg'"):
            b.mean("y", where={"gg": 1})
        with pytest.raises(DpiwError, match="no column 'xx'"):
            b.fit(LinearRegression(), ["xx"], "y")
    with pytest.raises(DpiwError, match="not a whole number, and 'n' holds whole numbers"):
        b.mean("y", where={"n": 3.5})
    with pytest.raises(DpiwError, match="not a whole number"):
        b.mean("y", where={"n": "3"})
    with _no_warning():  # an empty subgroup or a failing function: the error alone
        with pytest.raises(DpiwError, match="no synthetic row is in the subgroup"):
            b.mean("y", where={"n": 1000})
        with pytest.raises(DpiwError, match="the function failed .*AttributeError.*columns are"):
            b.mean("y", where=lambda d: d.nn > 3)
    for bad in ([], ["x", "x"]):
        with pytest.raises(DpiwError, match="at least one column, each once"):
            b.fit(LinearRegression(), bad, "y")
    with pytest.raises(DpiwError, match="the target 'y' is among the features"):
        b.fit(LinearRegression(), ["x", "y"], "y")
    with pytest.raises(DpiwError, match=r"features must be a list of column names, e.g. \['x'\]"):
        b.fit(LinearRegression(), "x", "y")
    with pytest.raises(DpiwError, match=r"share: 200 lies outside 'x''s public bounds \[0, 10\].*0 or 1 by "
                                        r"construction.*a value inside the bounds"):
        b.share("x", ">", 200)
    assert b.share("x", ">", 10).value == 0.0 and b.share("x", "<=", 10).value == 1.0  # the bounds themselves
    wide = load_bundle(write_bundle(tmp_path / "w", n=2000, weights=np.full(2000, 0.1)))  # weights of 0.1: sums off
    assert all(0.0 <= wide.share("x", op, 0.0).value <= 1.0 for op in (">=", ">", "<=", "<"))


def _no_warning():
    import warnings
    from contextlib import contextmanager

    @contextmanager
    def check():
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            yield
        assert not seen, [str(w.message) for w in seen]

    return check()


def test_fit_gives_coefficients_whose_intervals_cover(tmp_path):
    """Sampling-only intervals (no published measurements) on 60 bundles of the population: the intercept,
    x and g intervals cover 1, 2, -3 in 85-100% of them (95% nominal; a resampling interval of 30 draws)."""
    covered = []
    for seed in range(60):
        b = load_bundle(write_bundle(tmp_path / f"b{seed}", n=400, seed=seed))
        fit = b.fit(LinearRegression(), ["x", "g"], "y")
        t = fit.table
        covered.append([t.lo[k] <= v <= t.hi[k] for k, v in (("(intercept)", 1), ("x", 2), ("g=1", -3))])
    rate = np.mean(covered, axis=0)
    assert np.all(rate >= 0.85) and np.all(rate <= 1.0), rate
    assert fit.coef_.shape == (2,) and "95% interval" in str(fit)  # the estimator's attributes pass through
    with pytest.raises(DpiwError, match="LogisticRegression is a classifier and 'y' is numeric"):
        b.fit(LogisticRegression(), ["x"], "y")  # not one class per value of y
    with pytest.raises(DpiwError, match="LinearRegression is a regressor and 'g' is categorical"):
        b.fit(LinearRegression(), ["x"], "g")
    logit = b.fit(LogisticRegression(), ["x"], "g")
    assert list(logit.table.index) == ["(intercept)", "x"] and logit.predict(b.design(["x"])).shape == (400,)
    assert str(logit).splitlines()[0] == "(the log-odds of '1' against '0')"  # which class the coefficients are of
    from sklearn.linear_model import RidgeClassifier

    assert str(b.fit(RidgeClassifier(), ["x"], "g")).splitlines()[0] == "(the coefficients of '1' against '0')"
    scaled = load_bundle(write_bundle(tmp_path / "old", n=400, seed=1))
    (tmp_path / "old" / "schema.json").unlink()  # a bundle from before schemas: categories are codes, no check
    with pytest.warns(UserWarning):
        scaled = load_bundle(tmp_path / "old")
    assert scaled.fit(LogisticRegression(), ["x"], "g").table is not None
    # an estimator's warning comes once, with how many of the 31 fits (the point and 30 resamples) gave it
    with pytest.warns(ConvergenceWarning) as caught:
        b.fit(LogisticRegression(max_iter=1), ["x"], "g")
    said = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(said) == 1 and "(b.fit: 31 of the 31 fits" in said[0], said
    b.data.loc[:39, "x"] = np.nan  # empty values (a `missing: indicator` column): the fit says it drops them
    with pytest.warns(UserWarning, match=r"b.fit: 40 of the 400 rows \(10%\) have an empty value in \[.x., .y.\]"):
        b.fit(LinearRegression(), ["x"], "y")
    b.data.loc[:39, "x"] = 1.0
    # a warning whose text carries each fit's own numbers (Lasso's duality gap) is still one kind, counted per fit
    with pytest.warns(ConvergenceWarning) as caught:
        b.fit(Lasso(alpha=1e-6, max_iter=1, tol=1e-12), ["x", "g"], "y")
    said = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(said) == 1 and "(b.fit: 31 of the 31 fits" in said[0], said


def test_export_reads_back_as_csv_and_parquet(tmp_path):
    from dpiw.commands.export import export

    w = np.random.default_rng(1).uniform(0.5, 2, 2000)
    folder = write_bundle(tmp_path / "b", weights=w)
    b = load_bundle(folder)
    for name in ("rows.csv", "rows.parquet"):
        out, _ = export(folder, tmp_path / name)
        back = pd.read_csv(out) if name.endswith(".csv") else pd.read_parquet(out)
        assert list(back.columns) == ["x", "n", "g", "y", "weight"]
        np.testing.assert_allclose(back.weight, w * len(w) / w.sum())
        np.testing.assert_allclose(np.average(back.x, weights=back.weight), b.mean("x").value)
        assert back.n.dtype.kind == "i"
        mask = os.umask(0o022)
        os.umask(mask)
        assert out.stat().st_mode & 0o777 == 0o666 & ~mask  # a file to share, not mkstemp's 0600
    with pytest.raises(DpiwError, match="exists"):
        export(folder, tmp_path / "rows.csv")
    with pytest.raises(DpiwError, match=r"\.csv or \.parquet"):
        export(folder, tmp_path / "rows.xlsx")


def test_export_to_parquet_writes_numbered_categories_beside_missing(tmp_path):
    """Categories declared as numbers with `missing: category` ([0, 1, "missing"]): parquet holds one type a
    column, so they are written as text; without "missing" they stay numbers (the test above)."""
    from dpiw.commands.export import export

    schema = {**SCHEMA, "columns": [*SCHEMA["columns"][:2], {**SCHEMA["columns"][2], "missing": "category"},
                                    SCHEMA["columns"][3]]}
    folder = write_bundle(tmp_path / "b")
    (folder / "schema.json").write_text(json.dumps({"schema": parse_schema(schema).public_dict()}))
    out, _ = export(folder, tmp_path / "rows.parquet")
    back = pd.read_parquet(out)
    assert list(back.g.cat.categories) == ["0", "1", "missing"]
    assert back.g.astype(str).tolist() == load_bundle(folder).data.g.astype(str).tolist()


def test_a_table_with_its_own_weight_column_keeps_it_in_export_and_show(tmp_path):
    """A body weight named 'weight' (health data): the export and `dpiw show` put the importance weights in
    'dpiw_weight' (or the name --weight-column gives) and leave the table's column as it is."""
    from dpiw.commands.export import export
    from dpiw.commands.show import describe_bundle

    folder = write_bundle(tmp_path / "b", weights=np.random.default_rng(2).uniform(0.5, 2, 2000))
    spec = json.loads((folder / "schema.json").read_text())
    spec["schema"]["columns"][0]["name"] = "weight"  # x, a number from 0 to 10
    (folder / "schema.json").write_text(json.dumps(spec))
    pd.read_parquet(folder / "synthetic.parquet").rename(columns={"x": "weight"}).to_parquet(
        folder / "synthetic.parquet")
    out, name = export(folder, tmp_path / "rows.csv")
    back = pd.read_csv(out)
    assert name == "dpiw_weight" and list(back.columns) == ["weight", "n", "g", "y", "dpiw_weight"]
    assert back.weight.max() > 5 and back.dpiw_weight.mean() == pytest.approx(1)  # 0-10, and the mean-1 weights
    out, name = export(folder, tmp_path / "rows.parquet", weight="w")
    assert list(pd.read_parquet(out).columns)[-1] == "w" == name
    with pytest.raises(DpiwError, match="--weight-column n: the table has a column of that name"):
        export(folder, tmp_path / "other.csv", weight="n")
    head = describe_bundle(folder, rows=3)
    header = next(line for line in head if "dpiw_weight" in line).split()
    assert header[0] == "weight" and header[-1] == "dpiw_weight"


def test_an_estimate_on_a_relation_no_marginal_measured_says_so(tmp_path):
    """b.measured_pairs: the pairs of columns some published marginal holds together (the generator's and the
    weights'); a rate or mean in a subgroup, or a fit, that needs another pair warns, naming it; the datasheet
    lists the target's partners and the columns it was not measured with."""
    import warnings
    from dataclasses import replace

    from dpiw.analysis import UnmeasuredWarning
    from dpiw.analysis.datasheet import _measured_together

    b = load_bundle(write_bundle(tmp_path / "b", n=400))
    assert b.measured_pairs is None  # nothing published: nothing said
    names = ["x", "n", "g", "y"]
    b = replace(b, measurements={"generator": {"columns": names, "measurements": [
        {"clique": [0]}, {"clique": [0, 3]}, {"clique": [1, 2]}]}, "weights": {"columns": names, "measurements": [
            {"clique": [0, 1, 2]}]}})
    assert b.measured_pairs == {frozenset(p) for p in (("x", "y"), ("n", "g"), ("x", "n"), ("x", "g"))}
    with pytest.warns(UnmeasuredWarning, match=r"mean\('y', where=\{'g': 1\}\): no marginal of the release "
                                              r"measured 'y' together with 'g'"):
        b.mean("y", where={"g": 1}, interval="sampling")
    with pytest.warns(UnmeasuredWarning, match=r"'y' together with 'n' or 'g' \(b.measured") as said:
        fit = b.fit(LinearRegression(), ["x", "n", "g"], "y", interval="sampling")  # every pair of features measured
    assert len(said) == 1 and "; nor" not in str(said[0].message)
    # the coefficients of the features measured with the target, and those not (the intercept with the latter)
    assert "the coefficients of 'n', 'g' and the intercept(s) are those whose feature was not measured" in str(
        said[0].message)
    assert fit.table.measured.to_dict() == {"(intercept)": False, "x": True, "n": False, "g=1": False}
    printed = {line.split()[0]: line.rstrip().endswith("†") for line in str(fit).splitlines()[1:5]}
    assert printed == {"(intercept)": True, "x": False, "n": True, "g=1": True}
    assert "† no published marginal" in str(fit)
    b2 = replace(b, measurements={"generator": {"columns": names, "measurements": [
        {"clique": [0, 3]}, {"clique": [1, 3]}, {"clique": [2, 3]}, {"clique": [1, 2]}]}})
    b3 = replace(b, measurements={"generator": {"columns": names, "measurements": [
        {"clique": [0, 3]}, {"clique": [1, 3]}, {"clique": [2, 3]}]}})
    with pytest.warns(UnmeasuredWarning, match=r"fit\(\.\.\., 'y'\): no marginal of the release measured 'x' "
                                              r"with 'n', 'x' with 'g' \(each coefficient is adjusted") as said:
        b2.fit(LinearRegression(), ["x", "n", "g"], "y", interval="sampling")  # every feature with y, not x with n
    assert len(said) == 1 and "together with" not in str(said[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnmeasuredWarning)
        kept = b2.fit(LinearRegression(), ["n", "g"], "y", interval="sampling")  # (n, g) measured
        b3.mean("y", where={"n": 3, "g": 1}, interval="sampling")  # a subgroup: its columns' own pair unasked
    assert kept.table.measured.all() and "†" not in str(kept)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnmeasuredWarning)
        b.mean("x", where={"g": 1}, interval="sampling")  # measured (by the weights' three-way marginal)
        b.rate("g", 1, where={"n": 3}, interval="sampling")
        b.mean("x", where=lambda d: (d.g == 1) & (d["n"] > 3), interval="sampling")  # it reads g and n: measured
    with pytest.warns(UnmeasuredWarning, match=r"mean\('y', where=\.\.\.\): .*'y' together with 'g'"):
        b.mean("y", where=lambda d: d.g == 1, interval="sampling")  # the columns a function reads: found
    with pytest.warns(UnmeasuredWarning, match=r"'y' together with 'g'"):
        b.mean("y", where=lambda d: d.get("g") == 1, interval="sampling")
    lines = _measured_together(b)
    assert lines[0] == "The target <code>y</code> with: <code>x</code>."
    assert "<code>n</code>, <code>g</code>" in lines[1]
    from dpiw.commands.show import describe_bundle

    (tmp_path / "b" / "measurements.json").write_text(json.dumps(b.measurements))
    assert describe_bundle(tmp_path / "b")[0] == ("bundle     400 synthetic rows, every weight 1 (no weights: the "
                                                  "generator's rows as they are)")  # no k-hat of unit weights
    said = [line for line in describe_bundle(tmp_path / "b") if line.startswith("measured")]
    assert said == ["measured   the target 'y' together with x; not with n, g (the model's relation, which no "
                    "interval covers)"]


def test_a_where_function_on_a_column_with_empty_values_leaves_them_out():
    """A `missing: indicator` column is Int64 (or float with NaN) in b.data: `lambda d: d.n >= 40` gives <NA> for
    an empty row, which is not in the subgroup (numpy refused to make a boolean mask of it)."""
    from dpiw.analysis.noise_aware import subgroup

    data = pd.DataFrame({"n": pd.array([50, None, 10, 41], dtype="Int64"), "x": [1.0, np.nan, 3.0, 4.0]})
    assert list(subgroup(data, lambda d: d.n >= 40)) == [True, False, False, True]
    assert list(subgroup(data, lambda d: d.x > 2)) == [False, False, True, True]
    assert list(subgroup(data, lambda d: d.get("n") == 10)) == [False, False, True, False]


def test_a_mean_that_rests_on_a_far_tail_says_so_and_one_on_the_body_does_not(tmp_path):
    """TailWarning: the top 1% of the released rows (by weight) carry 10% or more of the mean above the lower
    bound. A lognormal of shape 2 (top 1%: about 36%) warns, naming the median and a share instead; one of shape
    0.5 (about 4%) does not; nor does the heavy column within a subgroup of its body."""
    import warnings

    from dpiw.analysis import TailWarning

    b = load_bundle(write_bundle(tmp_path / "b", n=4000))
    rng = np.random.default_rng(3)
    heavy = np.minimum(rng.lognormal(0.0, 2.0, len(b.data)), 1e4)
    light = rng.lognormal(0.0, 0.5, len(b.data))
    data = b.data.assign(x=heavy, y=light)
    from dataclasses import replace

    b = replace(b, data=data)
    spec = type("Spec", (), {"lower": 0.0, "upper": 1e4, "is_numeric": True})()
    with pytest.warns(TailWarning, match=r"mean\('x'\): the top 1% of these rows carry 3\d% of the mean above the "
                                         r"lower bound.*b.quantile\('x'\).*b.share\('x', '>', value\)"):
        b._tail("mean('x')", "x", spec, None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TailWarning)
        b._tail("mean('y')", "y", spec, None)
        b._tail("mean('x', where=...)", "x", spec, lambda d: d.x < 2)  # its body: no far tail
    with pytest.warns(TailWarning, match=r"b.quantile\('x', where=\{'g': 1\}\).*b.share\('x', '>', value, "
                                         r"where=\{'g': 1\}\)"):  # the alternatives over the same subgroup
        b._tail("mean('x', where={'g': 1})", "x", spec, {"g": 1})
    counts = replace(b, data=b.data.assign(n=np.minimum(np.rint(heavy), 100.0)))  # through b.mean: a count 0-100
    with pytest.warns(TailWarning, match=r"^mean\('n'\): the top 1%") as said:
        counts.mean("n", interval="sampling")
    assert said[0].filename == __file__  # at the caller's line
    one = np.ones(len(b.data))
    one[0] = 0.05 * len(b.data)  # a row weighing 5% of the rest, with the largest value: it alone is the top 1%
    big = replace(b, data=data.assign(y=np.where(np.arange(len(b.data)) == 0, 1e4, light)), weights=one)
    with pytest.warns(TailWarning, match=r"carry \d\d% of the mean") as said:
        big._tail("mean('y')", "y", spec, None)
    shifted = type("Spec", (), {"lower": -1e3, "upper": 1e4, "is_numeric": True})()
    with warnings.catch_warnings():  # above a lower bound far below the rows, the tail is a small part of the sum
        warnings.simplefilter("error", TailWarning)
        b._tail("mean('x')", "x", shifted, None)


def test_a_release_names_its_marginals_that_are_mostly_noise(tmp_path, capsys):
    """noisy_marginals: a generator marginal whose typical cell (N over its cells) holds less than one noise sd
    (x with y: 400 rows over 64 cells at sd 10, 0.62 sds a cell) is named, noisiest first; one above its noise
    (n with g: 5 sds) is not, nor one measured again at a tenth of the sd (AIM's way: judged at their combined
    noise); `dpiw release` prints the noisiest in words and the rest in one line. An analyst's estimates do not
    warn of it (on the simulated populations such marginals lost no coverage)."""
    from dpiw.analysis.noisy import noisy_marginals
    from dpiw.commands.release import _crowded

    folder = write_bundle(tmp_path / "b", n=400)
    b = load_bundle(folder)
    names = ["x", "n", "g", "y"]
    measurements = {"generator": {"total": 400.0, "columns": names, "bins": 8, "measurements": [
        {"clique": [0, 3], "counts": [0.0] * 64, "std": 10.0}, {"clique": [1, 2], "counts": [0.0] * 8, "std": 10.0},
        {"clique": [2, 3], "counts": [0.0] * 100, "std": 10.0}]}}
    found = noisy_marginals(measurements, b.schema)
    assert [(round(s, 3), cols, cells) for s, cols, cells in found] == [(0.4, ["g", "y"], 100), (0.625, ["x", "y"], 64)]
    again = json.loads(json.dumps(measurements))
    again["generator"]["measurements"].append({"clique": [0, 3], "counts": [0.0] * 64, "std": 1.0})
    assert [cols for _, cols, _ in noisy_marginals(again, b.schema)] == [["g", "y"]]
    assert noisy_marginals({"weights": {}}, b.schema) == []  # no generator measurements
    (folder / "measurements.json").write_text(json.dumps(measurements))
    _crowded(folder, b.schema)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "noise" in ln]
    assert lines == [f"dpiw release: the release measured 'g' with 'y' in a marginal of 100 cells whose typical cell "
                     f"holds 0.4 times its noise sd: {lines[0].split(' noise sd: ')[1]}",
                     "dpiw release: also under their noise: 'x' with 'y' (64 cells, 0.62 sds a cell)"]


def test_a_category_no_released_row_holds_has_no_coefficient(tmp_path):
    """A category whose noisy count came out near nothing has no released rows (a trial's loans: grade G, 12 rows
    in the table): the estimator leaves its indicator's coefficient at 0 with an interval of +-7.7 around it. The
    fit says so and gives NaN for it; the other coefficients are as they were."""
    folder = write_bundle(tmp_path / "b")
    rows = pd.read_parquet(folder / "synthetic.parquet")
    rows["g"] = 0  # no row of the category 1
    rows.to_parquet(folder / "synthetic.parquet")
    b = load_bundle(folder)
    with pytest.warns(UserWarning, match=r"b.fit: no released row holds g=1 .*NaN in the table, not the 0") as said:
        fit = b.fit(LinearRegression(), ["x", "g"], "y")
    assert [w.filename for w in said if "no released row" in str(w.message)] == [__file__]  # at the caller's line
    assert fit.table.loc["g=1", ["value", "se", "lo", "hi"]].isna().all()
    assert abs(fit.table.loc["x", "value"] - 2) < 0.1 and fit.table.loc["x", "lo"] < 2 < fit.table.loc["x", "hi"]
    assert "g=1" in str(fit) and "nan" in str(fit).splitlines()[-2]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        write_bundle(tmp_path / "c")
        assert not load_bundle(tmp_path / "c").fit(LinearRegression(), ["x", "g"], "y").table.value.isna().any()


def test_a_first_category_no_released_row_holds_is_not_the_reference(tmp_path):
    """No released row holds g = 0, the first category (a codebook's code nobody has; a trial's education = 0):
    against it, the intercept and g's indicators were collinear and every coefficient of g was against nothing
    (education's intercept 1,121, interval 194 to 2,048, with no warning). The reference is now the first
    category the rows hold, and the fit says so."""
    folder = write_bundle(tmp_path / "b")
    rows = pd.read_parquet(folder / "synthetic.parquet")
    rows["g"] = 1  # every row in the second category
    rows.to_parquet(folder / "synthetic.parquet")
    b = load_bundle(folder)
    with pytest.warns(UserWarning, match=r"b.fit: no released row holds g=0 \(the first category, the usual "
                                         r"reference\): the coefficients of 'g' are against g=1") as said:
        fit = b.fit(LinearRegression(), ["x", "g"], "y")
    assert [w.filename for w in said if "usual reference" in str(w.message)] == [__file__]
    assert list(fit.table.index) == ["(intercept)", "x", "g=0"]  # g=0: no row, no estimate (the NaN above)
    assert fit.table.loc["g=0", "value"] != fit.table.loc["g=0", "value"]
    assert abs(fit.table.loc["x", "value"] - 2) < 0.1 and fit.table.loc["(intercept)", "se"] < 0.5  # estimable
    assert list(b.design(["g"]).columns) == ["g=1"]  # the bundle's design itself keeps the schema's reference


def test_a_coefficient_is_not_measured_by_its_columns_emptiness_alone(tmp_path):
    """A marginal of (x_missing, y) measures whether x is empty with y, not how x's values go with y: x's
    coefficient is not marked measured by it (a review: MST's tree may pick that pair, tied publicly to x), and
    the fit's warning names x; with (x, y) measured it is marked."""
    from dpiw.analysis import UnmeasuredWarning
    from dpiw.analysis.bundle import Bundle
    from dpiw.data.schema import parse_schema

    schema = parse_schema({"name": "t", "task": "regression", "target": "y", "columns": [
        {"name": "x", "type": "numeric", "lower": 0, "upper": 10, "missing": "indicator"},
        {"name": "g", "type": "categorical", "categories": ["a", "b"]},
        {"name": "y", "type": "numeric", "lower": 0, "upper": 10}]})
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, 300)
    x[:30] = np.nan
    data = pd.DataFrame({"x": x, "x_missing": pd.Categorical(np.isnan(x).astype(int), categories=[0, 1]),
                         "g": pd.Categorical(rng.choice(["a", "b"], 300), categories=["a", "b"]),
                         "y": rng.uniform(0, 10, 300)})
    names = schema.names  # x, x_missing, g, y

    def bundle(cliques):
        return Bundle(data, np.ones(300), {}, None, schema, {"generator": {"columns": names, "measurements": [
            {"clique": [names.index(c) for c in clique]} for clique in cliques]}})

    only_empty = bundle([("x", "x_missing"), ("x_missing", "y"), ("g", "y")])
    with pytest.warns(UnmeasuredWarning, match=r"'y' together with 'x'.*coefficients of 'x' and the intercept\(s\)"):
        fit = only_empty.fit(LinearRegression(), ["x", "g"], "y", interval="sampling")
    assert fit.table.measured.to_dict() == {"(intercept)": False, "x": False, "g=b": True}
    assert only_empty.measured_with_target("x_missing", "y") and not only_empty.measured_with_target("x", "y")
    both = bundle([("x", "x_missing"), ("x", "y"), ("g", "y")])
    assert both.measured_with_target("x", "y") and both.measured_with_target("x_missing", "y")
    assert both.fit(LinearRegression(), ["x", "g"], "y", interval="sampling").table.measured.all()
