"""A benchmark run's public noise streams are keyed by its stage's flags: a flag added for a new option (a new
SDGP's keys, a cap that does not bind) must not redraw the noise of the runs that do not use it, or every
generated results page stops being what the code gives. The stream ids below are those the stages gave before
AIM and sdgp.max_rows were added."""

import json

import pytest

from dpiw.stages import fit_weights, scale, synthesize


@pytest.fixture(scope="module")
def iris(tmp_path_factory, root):
    d = tmp_path_factory.mktemp("streams")
    schema = str(root / "data/schemas/iris.yaml")
    scale.main(["--schema", schema, "--dataset", "iris", "--seed", "4", "--test-fraction", "0.2", "--bounds",
                "schema", "--train-out", str(d / "train.parquet"), "--test-out", str(d / "test.parquet"),
                "--privacy-out", str(d / "scale.json")])
    return d, schema


def _streams(path) -> list[str]:
    return json.loads(path.read_text())["seeding"]["streams"]


def test_a_marginals_run_keeps_its_streams(iris):
    d, schema = iris
    synthesize.main(["--train", str(d / "train.parquet"), "--schema", schema, "--sdgp", "marginals", "--epsilon",
                     "3", "--share", "full", "--delta", "paper", "--weights-epsilon-fraction", "0.1",
                     "--weights-delta-fraction", "0.3", "--seed", "4", "--bins", "10", "--structure",
                     "naive_bayes", "--max-rows", "1000000", "--out", str(d / "m.parquet"),
                     "--privacy-out", str(d / "m.json")])
    assert _streams(d / "m.json") == ["cfcfc5007c85cb7c6b15", "0da7efd8ed8d29aa7532"]


def test_an_mst_run_and_its_marginal_match_keep_their_streams(iris):
    d, schema = iris
    synthesize.main(["--train", str(d / "train.parquet"), "--schema", schema, "--sdgp", "mst", "--epsilon", "1",
                     "--share", "split", "--delta", "paper", "--weights-epsilon-fraction", "0.3",
                     "--weights-delta-fraction", "0.3", "--seed", "4", "--mst-bins", "8", "--mst-iters", "50",
                     "--mst-max-cells", "100000", "--out", str(d / "s.parquet"), "--privacy-out", str(d / "s.json"),
                     "--measurements-out", str(d / "meas.json")])
    assert _streams(d / "s.json") == ["69821ace5d190866d284", "2f65f3b0c1f3940faf6e"]
    fit_weights.main(["--real", str(d / "train.parquet"), "--synth", str(d / "s.parquet"), "--schema", schema,
                      "--method", "marginal_match", "--dataset", "iris", "--sdgp", "mst", "--epsilon", "1",
                      "--delta", "paper", "--weights-epsilon-fraction", "0.3", "--weights-delta-fraction", "0.3",
                      "--seed", "4", "--measurements", str(d / "meas.json"), "--out", str(d / "w.parquet"),
                      "--privacy-out", str(d / "w.json")])
    assert _streams(d / "w.json") == ["6e31366c9d9930b91751"]
