"""privacy.neighbours: add_remove end to end, as the config's header gives it: `git clone`, then
`snakemake --cores 2 --configfile configs/add_remove.yaml` (on the tiny grid here). Every run's manifest states
the relation, every record that spends budget holds for it, the noisy row count stands in for N_D (N_G comes
from it), and no manifest carries the split's true row counts."""

import json
import shutil

import pandas as pd
import pytest
from helpers import TINY, clone, sh

pytestmark = pytest.mark.slow

OUT = "results/add_remove"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    wd = clone(tmp_path_factory.mktemp("add_remove") / "repo")
    shutil.copy(TINY, wd / "params.yaml")  # the tiny grid, under the shipped overlay
    sh(["snakemake", "--cores", "2", "--configfile", "configs/add_remove.yaml"], wd)
    return wd


def _walk(node, key=None):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v, key)
    else:
        yield key, node


def test_every_manifest_holds_for_add_remove_and_withholds_the_row_counts(run):
    manifests = sorted((run / OUT / "runs").rglob("manifest.json"))
    assert len(manifests) > 20
    n_train = {}
    for path in manifests:
        m = json.loads(path.read_text())
        assert m["neighbours"]["relation"] == "add_remove", path
        assert m["data"]["n_train"].startswith("withheld"), path
        seed_dir = path.relative_to(run / OUT / "runs").parts
        dataset, seed = seed_dir[0], seed_dir[2]
        train = run / OUT / "private" / dataset / seed / "train.parquet"
        n_train.setdefault(train, len(pd.read_parquet(train)))
        for key, value in _walk(m):  # the true N_D appears under no row-count key
            if key in ("n_train", "n_test", "n_rows", "n_real", "n"):
                assert value != n_train[train], (path, key)
        spending = [r for r in m["records"] if r["dp"] and (r["epsilon"] or r["delta"])]
        assert all(r["neighbours"] == "add_remove" for r in spending), path
        assert spending or not m["dp"], path
        if m["dp"]:
            assert m["spent"]["epsilon"] <= m["budget"]["epsilon"] * (1 + 1e-9), path
            assert m["spent"]["rdp"]["epsilon"] is not None and "add_remove" in m["spent"]["rdp"]["accountant"]


def test_the_noisy_count_stands_in_for_n_d(run):
    records = sorted((run / OUT / "runs").rglob("privacy/synthesize_*.json"))
    assert records
    differ = 0
    for path in records:
        rec = json.loads(path.read_text())
        count = rec["details"]["row_count"]
        assert count["neighbours"] == "add_remove" and count["epsilon"] > 0
        if rec["dp"]:  # the count's Laplace event is in the record's RDP events, the SDGP got the rest
            assert {"kind": "laplace", "epsilon": count["epsilon"], "about": "noisy row count (add/remove)"} \
                in rec["rdp"]
            assert rec["details"]["mechanism_epsilon"] + count["epsilon"] == pytest.approx(rec["epsilon"])
        synth = path.parent.parent / path.name.replace("synthesize_", "synth_").replace(".json", ".parquet")
        assert len(pd.read_parquet(synth)) == count["noisy_n"]  # rows_factor 1: N_G = the noisy count
        dataset, _, seed = path.relative_to(run / OUT / "runs").parts[:3]
        differ += count["noisy_n"] != len(pd.read_parquet(run / OUT / "private" / dataset / seed / "train.parquet"))
    assert differ > len(records) // 2


def test_privbayes_takes_its_score_bound_from_the_count(run):
    rec = json.loads(next((run / OUT / "runs").rglob("privbayes/privacy/synthesize_*.json")).read_text())
    mi = rec["sensitivity"]["mutual_information_bits"]
    assert mi["score"] == "N_D I(X; Pi)" and mi["n_upper_bound"] > rec["details"]["row_count"]["noisy_n"]
    assert rec["delta"] == pytest.approx(mi["bound_failure_probability"]) and rec["delta"] > 0
