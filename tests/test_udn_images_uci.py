"""The UDN with the bottleneck-ResNet generator (CIFAR-10, UDN §4.2, §6.2) and with a Gaussian likelihood (UCI,
App. B.4): grown UDN vs finite net, BatchNorm statistics at evaluation, RMSE units, and the bad inputs."""

import math

import numpy as np
import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf

from bnnrepro.artifacts import udn_images
from bnnrepro.artifacts.claims import NotCheckable
from bnnrepro.artifacts.claims import udn_images as image_claims
from bnnrepro.artifacts.claims import udn_uci as uci_claims
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import catalog_entry
from bnnrepro.data.images import class_labels
from bnnrepro.data.spec import DataSpec
from bnnrepro.distributions import RegressionLikelihood
from bnnrepro.inference.depth_posteriors import FixedDepth, PointMassPrior, ShiftedPoissonPrior, TruncatedPoisson
from bnnrepro.methods import depth_networks
from bnnrepro.methods.depth_networks import DepthNetworkMethod
from bnnrepro.models.bottleneck_generator import bottleneck_resnet_layer, pooled_linear_head
from bnnrepro.models.unbounded_depth import UnboundedDepthNetwork, fully_connected_layer, linear_head
from bnnrepro.optim import Adam
from bnnrepro.train import evaluate

WIDTH = 1 / 16  # stem 4 channels, stages 4 / 8 / 16 wide: every stage exercised in milliseconds
CLASSES = 10


def images(n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 32, 32, 3, generator=g), torch.randint(0, CLASSES, (n,), generator=g)


def resnet_method(posterior, prior, heads="per_depth", shared_head_depth=1, seed=0):
    torch.manual_seed(seed)
    network = UnboundedDepthNetwork(
        bottleneck_resnet_layer(WIDTH, 40), pooled_linear_head(WIDTH, CLASSES), heads, shared_head_depth
    )
    return DepthNetworkMethod(network, posterior, prior, 1.0)


def train_batch_norms(method, x, steps=3):
    """A few train-mode forward passes, so that the running statistics differ from their initial values."""
    method.train()
    with torch.no_grad():
        for _ in range(steps):
            method.network(x, [method.network.depth])
    method.eval()


@pytest.mark.parametrize("depth", [3, 6, 11])
def test_grown_udn_predicts_as_the_finite_network_of_its_depth(depth):
    """Omega_m of a UDN grown to m equals the finite ResNet Omega_m with the same weights (its head o_m)."""
    udn = resnet_method(TruncatedPoisson(1.0), ShiftedPoissonPrior(1.0))
    udn.network.grow_to(depth)
    x, _ = images()
    train_batch_norms(udn, x)
    finite = resnet_method(FixedDepth(depth), PointMassPrior(), "shared", shared_head_depth=depth, seed=1)
    state = {
        k: v for k, v in udn.network.state_dict().items() if k.startswith("layers.") and int(k.split(".")[1]) < depth
    }
    state.update({k.replace(f"heads.{depth - 1}.", "heads.0."): v for k, v in udn.network.state_dict().items()
                  if k.startswith(f"heads.{depth - 1}.")})  # fmt: skip
    finite.network.load_state_dict(state)
    finite.eval()
    torch.testing.assert_close(udn.network(x, [depth])[0], finite.network(x, [depth])[0])
    torch.testing.assert_close(finite.predict(x), finite.network(x, [depth])[0].softmax(-1))
    # the check is not vacuous: a shallower truncation of the UDN predicts otherwise
    assert not torch.allclose(udn.network(x, [depth - 1])[0], finite.network(x, [depth])[0])


def test_layers_beyond_the_support_leave_evaluation_unchanged():
    """Layers and heads instantiated earlier but now outside the support of q(l) (lambda shrank): scrambling their
    BatchNorm statistics and weights changes no prediction."""
    udn = resnet_method(TruncatedPoisson(1.0), ShiftedPoissonPrior(1.0))
    support = udn.depth_posterior.max_depth()
    udn.network.grow_to(support + 3)
    x, _ = images()
    train_batch_norms(udn, x)
    before = udn.predict(x)
    with torch.no_grad():
        for layer in list(udn.network.layers)[support:]:
            for name, buffer in layer.named_buffers():
                if name.endswith(("running_mean", "running_var")):
                    buffer.uniform_(5, 10)
        for module in [*list(udn.network.layers)[support:], *list(udn.network.heads)[support:]]:
            for p in module.parameters():
                p.uniform_(-3, 3)
    torch.testing.assert_close(udn.predict(x), before, rtol=0, atol=0)


def test_fit_posterior_estimates_new_layers_batch_norm_statistics():
    """Layers created right before an evaluation (Algorithm 1) have initial BatchNorm statistics (mean 0, var 1);
    fit_posterior replaces them with the training inputs' batch statistics and leaves trained layers alone."""
    udn = resnet_method(TruncatedPoisson(1.0), ShiftedPoissonPrior(1.0))
    x, _ = images(n=12)
    trained_depth = udn.network.depth
    for batch_norm in (m for m in udn.network.modules() if isinstance(m, torch.nn.BatchNorm2d)):
        batch_norm.num_batches_tracked.fill_(1000)  # as if trained for long
    trained = {k: v.clone() for k, v in udn.network.state_dict().items()}
    with torch.no_grad():
        udn.depth_posterior.rho.fill_(3.0)  # lambda ~ 3: the support grows
    udn.network.grow_to(udn.depth_posterior.max_depth())  # the new layers, as Algorithm 1 adds them
    assert udn.network.depth > trained_depth
    udn.eval()
    udn.fit_posterior(x, None)
    with torch.no_grad():
        h = x
        for layer in udn.network.layers[:trained_depth]:
            h = layer(h)
        expected_mean = udn.network.layers[trained_depth].conv1(h).mean((0, 2, 3))
    torch.testing.assert_close(udn.network.layers[trained_depth].bn1.running_mean, expected_mean)
    for layer in udn.network.layers[trained_depth:]:
        for norm in (m for m in layer.modules() if isinstance(m, torch.nn.BatchNorm2d)):
            assert not torch.allclose(norm.running_var, torch.ones_like(norm.running_var))
    for key, value in trained.items():  # the layers that trained keep their statistics
        torch.testing.assert_close(udn.network.state_dict()[key], value, rtol=0, atol=0)


def uci_method(depth_posterior, prior, noise=None):
    torch.manual_seed(0)
    network = UnboundedDepthNetwork(fully_connected_layer(4, 8), linear_head(8, 1))
    return DepthNetworkMethod(network, depth_posterior, prior, 1.0, task="regression", noise=noise)


def test_regression_elbo_is_a_unit_variance_gaussian():
    udn = uci_method(TruncatedPoisson(1.0), ShiftedPoissonPrior(0.5))
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(10, 4, generator=g), torch.randn(10, 1, generator=g)
    outputs = udn.network(x, [1, 2, 3])
    expected = torch.distributions.Normal(outputs, 1.0).log_prob(y).sum((1, 2))
    torch.testing.assert_close(udn._log_likelihood(outputs, y), expected)
    log_q, depths = udn._support()
    mean = torch.einsum("d,dbc->bc", log_q.exp(), udn.network(x, depths))
    torch.testing.assert_close(udn.predict(x), mean[None])
    assert udn.noise_variance() == 1.0


@pytest.mark.usefixtures("one_torch_thread")
def test_a_learned_noise_fits_the_residual_variance() -> None:
    """`method.noise.learn_scale`: the likelihood's scale is trained with the weights (in the weights' Adam group) and
    reaches the mean squared residual of the network's fit (the maximum-likelihood noise given the fit), well below the
    targets' variance 0.25; the UDN paper's unit variance stays 1 (the negative control)."""
    g = torch.Generator().manual_seed(4)
    x, y = torch.randn(256, 4, generator=g), 0.5 * torch.randn(256, 1, generator=g)
    for learn in (True, False):
        torch.manual_seed(0)
        noise = RegressionLikelihood(1.0, "gaussian", learn_scale=learn)
        udn = uci_method(FixedDepth(2), PointMassPrior(), noise)  # a finite network: the UDN's likelihood, fast
        optimizer = Adam(udn.parameter_groups(0.01, 0.1))
        for _ in range(400):
            udn.training_step(x, y, len(x), optimizer)
        residual = float((udn.predict(x)[0] - y).square().mean())
        expected = residual if learn else 1.0
        assert udn.noise_variance() == pytest.approx(expected, rel=0.3)
        assert (udn.noise_variance() < 0.3) == learn


def test_uci_rmse_in_original_units_is_the_standardised_rmse_times_the_target_std():
    udn = uci_method(TruncatedPoisson(1.0), ShiftedPoissonPrior(0.5))
    g = torch.Generator().manual_seed(3)
    data = {s: (torch.randn(20, 4, generator=g), torch.randn(20, 1, generator=g)) for s in ("val", "test")}
    y_mean, y_std = 22.5, 9.19
    values = evaluate(udn, data, "regression", ("val", "test"), (y_mean, y_std))
    for split in ("val", "test"):
        assert values[f"{split}_rmse_original"] == pytest.approx(values[f"{split}_rmse"] * y_std, rel=1e-5)
        x, y = data[split]
        direct = math.sqrt(float((udn.predict(x)[0] - y).square().mean()))
        assert values[f"{split}_rmse"] == pytest.approx(direct, rel=1e-5)


# --- bad input --------------------------------------------------------------------------------------------


def build(method: str, **generator) -> DepthNetworkMethod:
    cfg = OmegaConf.create({
        "method": OmegaConf.load(f"config/train/method/{method}.yaml"),
        "dataset": {},
    })  # fmt: skip
    cfg.method.pop("defaults")
    cfg.method.generator = {**OmegaConf.load("config/train/depth_generator/default.yaml"), **generator}
    return depth_networks.build(cfg, DataSpec("classification", 32, 10, (32, 32, 3)))


def test_a_depth_above_the_generators_maximum_names_it():
    udn = build("udn", kind="bottleneck_resnet", width_multiplier=WIDTH, max_depth=11)
    with pytest.raises(ValueError, match=r"layer 12 is deeper than .* max_depth = 11: raise"):
        udn.network.grow_to(12)


def test_a_finite_network_deeper_than_the_maximum_fails_at_build():
    with pytest.raises(ValueError, match=r"layer 11 is deeper than .* max_depth = 10"):
        build_finite_at(20, max_depth=10)


def build_finite_at(depth: int, max_depth: int) -> DepthNetworkMethod:
    cfg = OmegaConf.create({"method": OmegaConf.load("config/train/method/finite.yaml"), "dataset": {}})
    cfg.method.pop("defaults")
    cfg.method.depth = depth
    cfg.method.generator = {"kind": "bottleneck_resnet", "width": 8, "width_multiplier": WIDTH,
                            "max_depth": max_depth}  # fmt: skip
    return depth_networks.build(cfg, DataSpec("classification", 32, 10, (32, 32, 3)))


def test_a_width_multiplier_with_zero_channels_names_the_fix():
    with pytest.raises(ValueError, match=r"width_multiplier 0\.005 gives 0 channels"):
        build("udn", kind="bottleneck_resnet", width_multiplier=0.005)


def test_dun_refuses_the_bottleneck_generator():
    with pytest.raises(ValueError, match="fully_connected"):
        build("dun", kind="bottleneck_resnet", width_multiplier=WIDTH)


def test_an_unknown_generator_kind_names_the_choices():
    with pytest.raises(ValueError, match="fully_connected or bottleneck_resnet"):
        build("udn", kind="resnet")


def test_class_names_and_unknown_class_names():
    names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    assert class_labels(["deer", "automobile"], names) == [4, 1]
    assert class_labels([3, "5"], names) == [3, 5]
    with pytest.raises(ValueError, match=r"unknown class 'kitten'.*airplane, automobile"):
        class_labels(["kitten", "dog"], names)
    assert np.array_equal(class_labels(["cat", "dog"], names), [3, 5])


# --- artifacts and claims -----------------------------------------------------------------------------------


def tidy_metrics(tmp_path, study: str, rows: list[tuple[str, str, int, str, float]]) -> ArtifactContext:
    """A tidy metrics CSV of (method, dataset, repetition, metric, value) rows (repetition: split and seed)."""
    frame = pd.DataFrame([
        {"study": study, "run": f"{m}/{d}/{s}", "method": m, "dataset": d, "seed": s, "standin": False, "split": s,
         "metric": metric, "value": value}
        for m, d, s, metric, value in rows
    ])  # fmt: skip
    path = tmp_path / "metrics.csv"
    frame.to_csv(path, index=False)
    return ArtifactContext(study, "paper", path)


def uci_rows(depths: dict[str, float], rmse: dict[tuple[str, str], float]) -> list:
    """Five splits; each method's RMSE moves per split by a jitter of its own, so that paired differences spread."""
    rows = [("udn", f"uci_{d}", s, "expected_depth", v + 0.01 * s) for d, v in depths.items() for s in range(5)]
    rows += [(m, f"uci_{d}", s, "test_rmse_original", v * (1 + 0.01 * s + 0.002 * ((s * len(m)) % 3)))
             for (m, d), v in rmse.items() for s in range(5)]  # fmt: skip
    return rows


def test_uci_claims_hold_and_fail_on_constructed_results(tmp_path):
    """Fig. 8's claims: E_q[l] < 2 on the five easy sets, more layers on the hard ones, the UDN competitive."""
    shown = tidy_metrics(tmp_path, "udn_uci", uci_rows(
        {"yacht": 1.6, "boston": 1.8, "wine": 2.6},
        {("udn", "yacht"): 1.0, ("f2", "yacht"): 1.0, ("udn", "wine"): 0.62, ("f2", "wine"): 0.64},
    ))  # fmt: skip
    assert uci_claims.udn_shallow_on_easy_uci(shown).holds
    assert uci_claims.udn_deeper_on_hard_uci(shown).holds
    assert uci_claims.udn_competitive_on_uci(shown).holds
    udn_alone = tidy_metrics(tmp_path, "udn_uci", uci_rows({"power": 1.7}, {("udn", "power"): 9.0}))
    with pytest.raises(NotCheckable, match="UDN and of a finite network"):
        uci_claims.udn_competitive_on_uci(udn_alone)
    with_udn_alone = tidy_metrics(tmp_path, "udn_uci", uci_rows(
        {"yacht": 1.6, "power": 1.7}, {("udn", "yacht"): 1.0, ("f2", "yacht"): 1.0, ("udn", "power"): 9.0},
    ))  # fmt: skip
    outcome = uci_claims.udn_competitive_on_uci(with_udn_alone)
    assert outcome.holds and "power" not in outcome.evidence  # a set with the UDN alone is left out
    contradicted = tidy_metrics(tmp_path, "udn_uci", uci_rows(
        {"yacht": 2.4, "boston": 1.8, "wine": 1.7},
        {("udn", "yacht"): 1.5, ("f2", "yacht"): 1.0, ("udn", "wine"): 0.62, ("f2", "wine"): 0.64},
    ))  # fmt: skip
    assert uci_claims.udn_shallow_on_easy_uci(contradicted).holds is False
    assert uci_claims.udn_deeper_on_hard_uci(contradicted).holds is False
    assert uci_claims.udn_competitive_on_uci(contradicted).holds is False


def test_cifar_claims_on_constructed_results(tmp_path):
    """Five seeds each, every model's value moved alike per seed and by a small jitter of its own."""
    base = [("udn@deer_car", "last_expected_depth", 2.0), ("udn@cat_dog", "last_expected_depth", 4.0),
            ("udn", "last_expected_depth", 9.0)]  # fmt: skip
    base += [(m, "test_accuracy", a) for m, a in
             (("udn@deer_car", 0.985), ("udn@cat_dog", 0.87), ("udn", 0.945), ("finite_5", 0.917),
              ("finite_15", 0.94), ("finite_30", 0.939))]  # fmt: skip

    def seeded(triples):
        return [(m, "cifar10", seed, metric, value + 0.001 * seed + 0.0003 * ((seed * len(m)) % 3))
                for seed in range(5) for m, metric, value in triples]  # fmt: skip

    context = tidy_metrics(tmp_path, "udn_images", seeded(base))
    assert image_claims.udn_deepens_with_task_difficulty(context).holds
    assert image_claims.udn_subset_accuracies(context).holds
    assert image_claims.udn_best_on_cifar(context).holds
    worse_base = [(m, metric, (1.0 if metric == "last_expected_depth" else 0.6) if m == "udn@cat_dog" else value)
                  for m, metric, value in base]  # fmt: skip
    worse_base = [
        (m, metric, 0.99 if m == "finite_5" and metric == "test_accuracy" else v) for m, metric, v in worse_base
    ]
    worse = tidy_metrics(tmp_path, "udn_images", seeded(worse_base))
    assert image_claims.udn_deepens_with_task_difficulty(worse).holds is False
    assert image_claims.udn_subset_accuracies(worse).holds is False
    assert image_claims.udn_best_on_cifar(worse).holds is False  # finite_5 (L = 5) now the best and above the UDN


def test_table2_rows_are_the_papers_and_the_pmf_is_the_truncated_poisson():
    """Table 2's rows name ResNet-3L (the catalog's row names); q(l) at lambda = 1 is (0.375, 0.375, 0.1875,
    0.0625): lambda^(l-1)/(l-1)! over l = 1..4, the support m = 4 of TP(0.95)."""
    published = {v["row"] for v in catalog_entry("udn/table2")["published"]["values"]}
    ours = {udn_images.table_row(m) for m in ("udn", "finite_5", "finite_8", "finite_10", "finite_15", "finite_20",
                                               "finite_30")}  # fmt: skip
    assert ours <= published
    pmf = udn_images.depth_log_pmf(1.0).exp().numpy()
    np.testing.assert_allclose(pmf, [0.375, 0.375, 0.1875, 0.0625], rtol=1e-5)


def test_fit_posterior_leaves_layers_beyond_the_support_alone():
    """A layer beyond the support of q(l) (grown when lambda was larger) keeps its BatchNorm statistics, however few
    batches they saw: the evaluation never reaches it, and it resumes from them if the support grows back."""
    udn = resnet_method(TruncatedPoisson(1.0), ShiftedPoissonPrior(1.0))
    support = udn.depth_posterior.max_depth()
    udn.network.grow_to(support + 2)
    x, _ = images()
    train_batch_norms(udn, x, steps=2)  # every layer has seen 2 batches only: all stale
    beyond = {k: v.clone() for k, v in udn.network.state_dict().items() if k.startswith(f"layers.{support}.")}
    udn.fit_posterior(x, None)
    for key, value in beyond.items():
        torch.testing.assert_close(udn.network.state_dict()[key], value, rtol=0, atol=0)
