"""The usefulness study's parts: the analyst's targets against a direct computation, the comparison of arms, the
budget advisor's closed form, and the release default doing no harm on one small real table (the study does
every table and size: docs/usefulness.md)."""

import math

import numpy as np
import pandas as pd
import pytest
from helpers import random_frame

from dpiw import DpiwError
from dpiw.data.schema import load_schema
from dpiw.evaluate.analyst import analyst_targets
from dpiw.studies.usefulness import ARMS, Study, cells, family, load_study, unit
from dpiw.weights.advisor import SNR_MIN, advise, expected_snr


@pytest.fixture(scope="module")
def cps(root):
    schema = load_schema(root / "data/schemas/cps1988.yaml")
    return schema, random_frame(schema, 300)


def test_integer_weights_are_repeated_rows(cps):
    """Weighted estimates equal the unweighted ones on the rows repeated as often as their weight: every target,
    including the weighted least-squares coefficients."""
    schema, frame = cps
    w = np.random.default_rng(1).integers(1, 4, size=len(frame))
    weighted = analyst_targets(frame, schema, w)
    repeated = analyst_targets(frame.loc[frame.index.repeat(w)].reset_index(drop=True), schema)
    assert weighted.keys() == repeated.keys()
    for k in weighted:
        assert weighted[k] == pytest.approx(repeated[k], rel=1e-9, abs=1e-12, nan_ok=True), k


def test_targets_against_pandas(cps):
    schema, frame = cps
    t = analyst_targets(frame, schema)
    assert t["mean wage"] == pytest.approx(frame["wage"].mean())
    by = frame.groupby("region")["wage"].mean()
    assert t["wage | region=south"] == pytest.approx(by[2])
    cell = frame[(frame["ethnicity"] == 1) & (frame["parttime"] == 0)]["wage"].mean()
    assert t["wage | ethnicity=afam, parttime=no"] == pytest.approx(cell)
    X = pd.get_dummies(frame.drop(columns="wage").astype({"ethnicity": str, "smsa": str, "region": str,
                                                          "parttime": str}), drop_first=True).astype(float)
    coef = np.linalg.lstsq(np.column_stack([np.ones(len(X)), X]), frame["wage"], rcond=None)[0]
    assert t["coef wage ~ education"] == pytest.approx(coef[1])
    assert {family(k) for k in t} == {"means and shares", "subgroups", "3-way cells", "regression",
                                      "pairs without the target"}
    # relations without the target: a column's mean or a category's rate within a subgroup of another
    assert t["pair education | region=west"] == pytest.approx(frame[frame.region == 3]["education"].mean())
    assert t["pair region=south | smsa=yes"] == pytest.approx((frame[frame.smsa == 1]["region"] == 2).mean())
    low = frame["experience"] < 0.25  # the first of a numeric column's 4 public bins of its scaled range
    assert t["pair parttime=yes | experience=[0,0.25)"] == pytest.approx((frame[low]["parttime"] == 1).mean())
    assert not any(k.startswith("pair wage") or "| wage=" in k for k in t)  # the target is in no pair
    assert "pair region=south | region=west" not in t


def _units(errors_by_arm: dict, seeds: int = 6) -> list[dict]:
    rng = np.random.default_rng(2)
    out = []
    for s in range(seeds):
        errs = {arm: scale * (1 + 0.05 * rng.standard_normal(40)) for arm, scale in errors_by_arm.items()}
        out.append({"table": "t", "rows": 100, "eps": 1.0, "seed": s, "targets": [f"mean x{j}" for j in range(40)],
                    "errors": errs, "advice": "marginal_match", "snr": 5.0, "signal": True})
    return out


def test_an_arm_with_half_the_error_wins_everywhere():
    base = np.linspace(1.0, 2.0, 40)
    units = _units({"none": base, "none_split": base, "marginal_match": 0.5 * base, "fed_to_generator": 2 * base,
                    "advisor": 0.5 * base})
    c = cells(units)["mst", "t", 100, 1.0]
    assert c["marginal_match"]["all"]["relmed"] == pytest.approx(0.5, rel=0.05)
    assert c["marginal_match"]["all"]["wins"] == 40 and c["marginal_match"]["all"]["losses"] == 0
    assert c["fed_to_generator"]["all"]["losses"] == 40
    assert c["none_split"]["all"]["wins"] + c["none_split"]["all"]["losses"] < 8  # the same errors: noise only
    assert c["vs_own_rows"]["wins"] == 40 and c["vs_own_rows"]["holm_losses"] == 0


def test_study_config_errors(tmp_path, root):
    bad = tmp_path / "u.yaml"
    bad.write_text("study: {tables: [cps1988], rows: [10], epsilons: [1]}\n")
    with pytest.raises(DpiwError, match="study.rows"):
        load_study(bad)
    bad.write_text("grid: {}\n")
    with pytest.raises(DpiwError, match="study:"):
        load_study(bad)
    study = load_study(root / "configs/usefulness.yaml")
    assert "mst" in study.sdgps and "full" in study.rows and set(ARMS) >= {"none", "marginal_match"}


def test_the_advisor_is_its_closed_form(cps):
    """snr = median_m (N / cells_m) / sigma_W with sigma_W = sqrt(m Delta^2 / (2 rho_W)): it grows like N and like
    sqrt(rho_W); the pick flips at SNR_MIN."""
    schema, _ = cps
    s1, sigma1 = expected_snr(1000, schema, epsilon=1.0, delta=1e-6, fraction=0.3)
    s2, sigma2 = expected_snr(10_000, schema, epsilon=1.0, delta=1e-6, fraction=0.3)
    assert sigma1 == sigma2 and s2 == pytest.approx(10 * s1)
    from dpiw.privacy.accounting import zcdp_rho

    rho_w = zcdp_rho(1.0, 1e-6) - zcdp_rho(0.7, 0.7e-6)
    m = 21  # 6 pairs with wage, 15 triples
    assert sigma1 == pytest.approx(math.sqrt(m * 2 / (2 * rho_w)), rel=1e-6)
    n_flip = math.ceil(1000 * SNR_MIN / s1)
    assert advise(n_flip, schema, epsilon=1.0, delta=1e-6, fraction=0.3).method == "marginal_match"
    assert advise(n_flip - 10, schema, epsilon=1.0, delta=1e-6, fraction=0.3).method == "none"


def test_the_release_default_does_no_harm_on_a_small_real_table():
    """`dpiw release`'s default on 2,000 rows of Fertility at epsilon 1 (the advisor picks marginal_match there):
    over 5 releases, no analyst target is worse with the weights than with the same bundle's unweighted rows,
    beyond noise (Holm over the targets, one-sided 2.5%), and the median error is below the unweighted rows'."""
    from dpiw.evaluate.compare import holm, paired_values

    study = Study(("fertility",), (2000,), (1.0,), 5, 1e-6, 0.3, ("mst",), 1)
    units = [unit(study, "fertility", 2000, 1.0, s, arms=("none_split", "marginal_match")) for s in range(5)]
    assert {u["advice"] for u in units} == {"marginal_match"}
    weighted, plain = (np.abs(np.stack([u["errors"][arm] for u in units])) for arm in ("marginal_match", "none_split"))
    keep = np.isfinite(weighted).all(axis=0) & np.isfinite(plain).all(axis=0)
    assert keep.sum() > 100
    pairs = {j: paired_values(weighted[:, j], plain[:, j], "abs_error") for j in np.nonzero(keep)[0]}
    assert not holm(pairs, side=-1), sorted(holm(pairs, side=-1))
    assert np.median(weighted[:, keep].mean(axis=0) / plain[:, keep].mean(axis=0)) < 1.0


def test_a_rerun_keeps_the_releases_it_still_needs():
    """Releases of an earlier run are kept (nothing recomputed) when the study still asks for them; one the study no
    longer asks for is dropped; a table's whole size counts as its 'full' rows."""
    from dpiw.studies.usefulness import run_study

    study = Study(("cps1988",), (2000, "full"), (1.0,), 1, 1e-6, 0.3, ("mst",), 1)
    old = [{"table": "cps1988", "rows": n, "eps": 1.0, "seed": 0, "sdgp": "mst"} for n in (2000, 28155)]
    stale = {"table": "cps1988", "rows": 2000, "eps": 3.0, "seed": 0, "sdgp": "mst"}
    lines = []
    kept = run_study(study, done=[*old, stale], progress=lines.append)
    assert kept == old and lines == ["usefulness: 2 of 2 releases kept from the last run, 0 to go"]


def test_aim_against_mst_is_paired_by_seed_and_the_rule_decides():
    """versus() pairs AIM's units with MST's of the same cell and seed: AIM with half MST's errors on the advisor
    arm wins every target there, the equal `none` arm is noise only; aim_verdict follows AIM_DEFAULT_SHARE."""
    from dpiw.studies.usefulness import AIM_DEFAULT_SHARE, aim_verdict, versus

    base = np.linspace(1.0, 2.0, 40)
    mst = [dict(u, sdgp="mst", seconds=2.0) for u in _units({"none": base, "advisor": base})]
    aim = [dict(u, sdgp="aim", seconds=20.0) for u in _units({"none": base, "advisor": 0.5 * base})]
    aim[0]["errors"] = {k: v * 1.01 for k, v in aim[0]["errors"].items()}  # paired by seed, not by list order
    pairs = versus(mst + aim[::-1])
    r = pairs["t", 100, 1.0]
    assert r["seeds"] == 6 and r["seconds"] == {"aim": 20.0, "mst": 2.0}
    assert r["advisor"]["relmed"] == pytest.approx(0.5, rel=0.05)
    assert r["advisor"]["wins"] == 40 and r["advisor"]["losses"] == 0
    assert r["none"]["wins"] + r["none"]["losses"] < 8
    assert aim_verdict(pairs) == (True, 1)
    worse = versus(mst + [dict(u, errors={k: 2 * v for k, v in u["errors"].items()}) for u in aim])
    assert aim_verdict(worse) == (False, 0)
    assert aim_verdict({}) == (False, 0) and 0.5 < AIM_DEFAULT_SHARE < 1
    assert versus(mst) == {}  # no AIM units: nothing to compare


def test_the_headline_gives_each_family_over_the_cells_the_advisor_picks():
    """The page's first answer is by family, over the cells where the advisor spends on weights only, and says
    plainly which family the weights make worse at the median."""
    from dpiw.studies.usefulness import FAMILIES, headline

    def cell(advice, means, others):
        return {"advice": advice, "marginal_match": {f: {"relmed": means if f == "means and shares" else others,
                                                         "wins": 0, "losses": 0} for f in FAMILIES}}

    table = {("mst", "t", 100, 1.0): cell(("none",), 9.0, 9.0),  # not picked: left out of the medians
             ("mst", "t", 1000, 1.0): cell(("marginal_match",), 1.1, 0.2),
             ("mst", "t", 1000, 3.0): cell(("marginal_match",), 1.3, 0.4),
             ("mst", "t", 9000, 3.0): cell(("marginal_match",), 1.2, 0.3)}
    text = headline(table, 0.3)[0]
    assert "In the 3 cells" in text and "means and shares 1.20 (1.10 to 1.30)" in text
    assert "subgroups 0.30 (0.20 to 0.40)" in text and "For means and shares it is worse at the median" in text
    assert headline({k: v for k, v in table.items() if k[2] == 100}, 0.3) == []


def test_a_page_of_some_of_the_configs_sdgps_says_which_it_leaves_out(tmp_path, root):
    """`--sdgps` renders the page of some SDGPs (the others' releases not rerun at this code): its first lines say
    which it leaves out; an SDGP the config does not hold is refused before anything runs."""
    from dataclasses import replace

    from dpiw.studies.usefulness import main, render

    study = load_study(root / "configs/usefulness.yaml")
    base = np.linspace(1.0, 2.0, 40)
    units = [dict(u, sdgp="mst", seconds=2.0) for u in _units(
        {"none": base, "none_split": base, "marginal_match": 0.5 * base, "fed_to_generator": 2 * base,
         "advisor": 0.5 * base})]
    page = render(replace(study, sdgps=("mst",)), cells(units), seconds=60.0, figure=None, units=units,
                  left_out=("privbayes", "aim"))
    assert "**This page leaves out the config's privbayes, aim**" in page.splitlines()[2]
    assert "**This page leaves out" not in render(study, cells(units), seconds=60.0, figure=None, units=units)
    with pytest.raises(DpiwError, match=r"--sdgps: choose from the config's \['mst', 'privbayes', 'aim'\]"):
        main(["--config", str(root / "configs/usefulness.yaml"), "--sdgps", "gan", "--render-only",
              "--units", str(tmp_path / "none.pkl")])


def test_a_run_of_some_sdgps_keeps_the_others_releases(tmp_path, root, monkeypatch):
    """`--sdgps mst` (not --render-only) saves the units it ran and, beside them, the other SDGPs' releases the
    pickle held: a partial rerun loses nothing of the rest."""
    from dpiw.studies import usefulness

    base = np.linspace(1.0, 2.0, 40)
    arms = {"none": base, "none_split": base, "marginal_match": 0.5 * base, "fed_to_generator": 2 * base,
            "advisor": 0.5 * base}
    mst = [dict(u, sdgp="mst", seconds=2.0) for u in _units(arms)]
    aim = [dict(u, sdgp="aim", seconds=9.0) for u in _units({k: v for k, v in arms.items() if k != "fed_to_generator"})]
    pd.to_pickle((mst + aim, 100.0), tmp_path / "units.pkl")
    ran = []
    monkeypatch.setattr(usefulness, "run_study", lambda study, done, save: ran.append(study.sdgps) or [
        u for u in done if u["sdgp"] in study.sdgps])  # as run_study keeps what the study asks for
    usefulness.main(["--config", str(root / "configs/usefulness.yaml"), "--sdgps", "mst", "--units",
                     str(tmp_path / "units.pkl"), "--out", str(tmp_path / "u.md"), "--figure", str(tmp_path / "u.png")])
    kept, _ = pd.read_pickle(tmp_path / "units.pkl")
    assert ran == [("mst",)] and sorted(u["sdgp"] for u in kept) == ["aim"] * 6 + ["mst"] * 6
    assert "leaves out the config's privbayes, aim" in (tmp_path / "u.md").read_text()
