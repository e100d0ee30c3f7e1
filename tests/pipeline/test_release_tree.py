"""`dpiw release --tree target`: MST's tree is a public star on the schema's target, so every column's relation
with the target is measured (a user trial's fits: a coefficient whose feature was measured with the target held
the table's value far more often than one whose feature was not), nothing is spent on choosing it, and the
release is another release (another name) than the one MST's own tree makes."""

import json
import os

from helpers import sh

from dpiw.analysis import load_bundle


def test_a_release_measures_every_column_with_the_target(tmp_path, root):
    env = {**os.environ, "DPIW_HOME": str(tmp_path / "home"), "DPIW_SECRET_KEY": "the tree test's key"}
    args = ["dpiw", "release", str(root / "data/examples/clinic.csv"), "--schema",
            str(root / "data/schemas/clinic.yaml"), "--epsilon", "1", "--cores", "1", "--project", "p"]
    sh([*args, "--tree", "target"], tmp_path, env=env)
    (manifest,) = (tmp_path / "p").rglob("release/manifest.json")
    b = load_bundle(manifest.parent)
    target = b.schema.target
    assert {frozenset((c, target)) for c in b.schema.names if c != target} <= b.measured_pairs
    assert b.measured_pairs == b.generator_pairs  # no weights at 400 rows: the tree is all there is
    text = manifest.read_text()
    assert "every column with the target" in text and json.loads(text)  # the mechanism says which tree
    # MST's own tree is another release: a new folder
    sh(args, tmp_path, env=env)
    assert len(list((tmp_path / "p").rglob("release/manifest.json"))) == 2
