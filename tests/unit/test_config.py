"""params.yaml validation: one clear error that names the field."""

import copy

import pytest

from dpiw import DpiwError
from dpiw.planning.config import load_yaml, validate_params


@pytest.fixture
def params(root):
    return load_yaml(root / "params.yaml")


@pytest.fixture
def check(root):
    schema = load_yaml(root / "workflow/schemas/params.schema.yaml")
    return lambda p: validate_params(p, schema, schema_dir=root / "data/schemas")


def test_default_params_are_valid(params, check):
    check(params)


@pytest.mark.parametrize("mutate, message", [
    (lambda p: p["weights"]["beta"].update(lambdaa=1.0), "unknown key 'lambdaa' (did you mean 'lambda'?)"),
    (lambda p: p["grid"].update(datasets=["toy", "irs"]), "unknown dataset 'irs' (did you mean 'iris'?)"),
    (lambda p: p["evaluation"].update(skip_bayes=["digit"]),
     "evaluation.skip_bayes: unknown dataset 'digit' (did you mean 'digits'?)"),
    (lambda p: p["grid"].update(epsilons=[-1]), "grid.epsilons.0 = -1"),
    (lambda p: p["grid"].update(weights=["betadebiased"]), "grid.weights.0 = 'betadebiased' is not one of"),
    (lambda p: p["post"]["temper"].update(alpha=1.5), "post.temper.alpha = 1.5"),
    (lambda p: p["privacy"].update(delta="tiny"), "privacy.delta = 'tiny' is not allowed"),
    (lambda p: p["scale"].pop("bounds"), "'bounds' is a required property"),
    (lambda p: p["datasets"]["toy"].pop("n_rows"), "datasets.toy.n_rows is required"),
    (lambda p: p["datasets"].update(iris={"n_rows": 500}), "datasets.iris takes no options"),
    (lambda p: p["sdgp"]["marginals"].update(bins="ten"), "sdgp.marginals.bins = 'ten'"),
    (lambda p: p["grid"].update(posts=["none", "psis+calibrate"]), "grid.posts[1]: post 'psis+calibrate'"),
    (lambda p: p["grid"].update(posts=["pareto"]), "unknown step 'pareto'"),
    (lambda p: p["scale"].update(public_fraction=0), "needs rows declared public: set scale.public_fraction"),
    (lambda p: p["scale"].update(public_fraction=0.7), "scale.public_fraction = 0.7"),
    (lambda p: (p["scale"].update(public_fraction=0), p["grid"].update(posts=["none"]),
                p["evaluation"].update(against="public")), "evaluation.against: public compares with the public"),
    (lambda p: p["evaluation"].update(against="train"), "evaluation.against = 'train'"),
    (lambda p: p["privacy"].update(accounting="lenient"), "privacy.accounting = 'lenient'"),
    (lambda p: p["post"]["truncate"].update(tau=0.5), "post.truncate.tau = 0.5 is not allowed"),
    (lambda p: p["post"]["resample"].update(scheme="stratified"), "post.resample.scheme = 'stratified'"),
    # NaN passes every JSON-schema bound (comparisons with NaN are false): refused on its own
    (lambda p: p["grid"].update(epsilons=[float("nan")]), "grid.epsilons.0 = nan: must be a finite number"),
    (lambda p: p["privacy"].update(dataset_epsilon=float("inf")), "privacy.dataset_epsilon = inf: must be a finite"),
    # a typo in grid.exclude would exclude nothing, silently
    (lambda p: p["grid"]["exclude"].append({"sdgp": "dpgna"}), "unknown sdgp 'dpgna' (did you mean 'dpgan'?)"),
    (lambda p: p["grid"]["exclude"].append({"weights": ["none", "beta_debaised"]}),
     "unknown weights 'beta_debaised' (did you mean 'beta_debiased'?)"),
    (lambda p: p["grid"]["exclude"].append({"dataset": "brest"}), "unknown dataset 'brest'"),
    (lambda p: p["grid"]["exclude"].append({"post": "psis+calibrate"}),
     "].post: post 'psis+calibrate': 'calibrate' must come first"),
    (lambda p: p.update(mode="publish"), "mode = 'publish' is not one of ['benchmark', 'release']"),
    # release mode runs only what may be published
    (lambda p: p.update(mode="release"), "mode: release, but grid lists ['logreg', 'mlp', 'gan', 'cgan']"),
])
def test_bad_params_name_the_field(params, check, mutate, message):
    bad = copy.deepcopy(params)
    mutate(bad)
    with pytest.raises(DpiwError) as exc:
        check(bad)
    assert message in str(exc.value)


def test_not_a_mapping(check, tmp_path):
    with pytest.raises(DpiwError, match="must be a mapping"):
        check(["grid"])
    (tmp_path / "p.yaml").write_text("grid: [unclosed\n")
    with pytest.raises(DpiwError, match="not valid YAML"):
        load_yaml(tmp_path / "p.yaml")
    (tmp_path / "q.yaml").write_text("a: 1\nb: [x, 2]\n")
    assert load_yaml(tmp_path / "q.yaml") == {"a": 1, "b": ["x", 2]}


def _release(p):
    p.update(mode="release")
    p["grid"].update(weights=["none", "beta_debiased"], sdgps=["marginals"], posts=["none"])
    p["scale"]["public_fraction"] = 0
    return p


@pytest.mark.parametrize("mutate, message", [
    (lambda p: p["scale"].update(public_fraction=0.1), "release mode never declares private rows public"),
    (lambda p: p["grid"].update(posts=["calibrate+psis"]), "set source.public_path in"),
    (lambda p: p["scale"].update(bounds="data"), "mode: release needs scale.bounds: schema"),
    (lambda p: p["privacy"].update(release_noise="secret_key"), "DPIW_SECRET_KEY is not set"),
    (lambda p: p["privacy"].update(accounting="paper"), "paper-accounting ablation, which is NOT DP"),
])
def test_release_mode_refuses_what_cannot_be_published(params, check, mutate, message, monkeypatch):
    monkeypatch.delenv("DPIW_SECRET_KEY", raising=False)
    good = _release(copy.deepcopy(params))
    check(good)
    mutate(good)
    with pytest.raises(DpiwError) as exc:
        check(good)
    assert message in str(exc.value)
    monkeypatch.setenv("DPIW_SECRET_KEY", "k")
    keyed = _release(copy.deepcopy(params))
    keyed["privacy"]["release_noise"] = "secret_key"
    check(keyed)


@pytest.mark.parametrize("against, rows", [("test", "/test.parquet"), ("public", "/public.parquet")])
def test_evaluation_against_picks_the_rows_the_evaluate_tasks_read(params, against, rows):
    from dpiw.planning import grid

    cfg = copy.deepcopy(params)
    cfg["evaluation"]["against"] = against
    cell = next(iter(grid.cells(cfg)))
    tasks = grid.plan(cfg, "evaluate", cell, "results/x")
    assert tasks
    for t in tasks:
        compared = t["argv"][t["argv"].index("--test") + 1]
        assert compared.endswith(rows) and compared in t["inputs"]
        assert t["argv"][t["argv"].index("--against") + 1] == against


def test_skip_bayes_reaches_the_evaluate_tasks_of_its_datasets_only(root, params, check):
    """configs/paper.yaml skips the Bayesian metric on digits (a 620-parameter posterior), nowhere else."""
    from dpiw.planning import grid

    cfg = copy.deepcopy(params)
    paper = load_yaml(root / "configs/paper.yaml")
    cfg["grid"].update(paper["grid"], seeds=[0])
    cfg["evaluation"].update(paper["evaluation"])
    check(cfg)
    seen = {}
    for cell in grid.cells(cfg):
        for t in grid.plan(cfg, "evaluate", cell, "results/x"):
            seen.setdefault(cell.dataset, set()).add(t["argv"][t["argv"].index("--bayes") + 1])
    assert seen.pop("digits") == {"skip"}
    assert seen and all(v == {"run"} for v in seen.values())
    del cfg["evaluation"]["skip_bayes"]  # a project's params.yaml from before the key: every run has the metric
    cell = next(c for c in grid.cells(cfg) if c.dataset == "digits")
    assert {t["argv"][t["argv"].index("--bayes") + 1] for t in grid.plan(cfg, "evaluate", cell, "results/x")} == {"run"}


def test_configuration_page_is_generated_from_the_schema_and_params(root):
    """docs/configuration.md cannot drift: it is the schema's descriptions and params.yaml's values."""
    from dpiw.planning.config import load_yaml, with_registry
    from dpiw.planning.config_docs import render

    schema = load_yaml(root / "workflow/schemas/params.schema.yaml")
    page = render(with_registry(schema), load_yaml(root / "params.yaml"))
    assert (root / "docs/configuration.md").read_text() == page, "stale: run `make docs`"
    for key in ("privacy.neighbours", "sdgp.privbayes.root", "weights.mlp.weight_decay", "grid.exclude"):
        assert f"`{key}`" in page

    def leaves(node, path):
        props = node.get("properties")
        if not props or path[-1:] == ["exclude"]:
            yield ".".join(path), node
            return
        for k, v in props.items():
            yield from leaves(v, [*path, k])

    assert [k for k, n in leaves(schema, []) if not n.get("description")] == []  # every key says what it does
