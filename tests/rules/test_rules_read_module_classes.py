"""Rules tell lookup tables and recurrent matrices from dense kernels by the module class the PyTorch hook records
(`module_type` in the catalogue), not by parameter names: a user table called `user`, a token table called `tok`."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from trainguard.rules.dead_relu import DeadRelu
from trainguard.rules.poor_weight_initialization import PoorWeightInitialization
from trainguard.rules.shared import KernelPair
from trainguard.rules.unchanged_tensor import UnchangedTensor
from trainguard.sidecar.view_builder import ViewBuilder, save_interval_of


class Recommender(nn.Module):
    """Tables initialised N(0, 1) (PyTorch's default for nn.Embedding), an IRNN (identity recurrent matrix), a dense
    layer and a head."""

    def __init__(self, dense_std: float) -> None:
        super().__init__()
        self.user = nn.Embedding(300, 16)
        self.tok = nn.Embedding(50, 16)
        self.rnn = nn.RNN(16, 16, nonlinearity="relu", batch_first=True)
        nn.init.eye_(self.rnn.weight_hh_l0)
        self.dense = nn.Linear(32, 32)
        nn.init.normal_(self.dense.weight, 0, dense_std)
        self.head = nn.Linear(32, 1)

    def forward(self, users: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        h = self.rnn(self.tok(tokens))[0][:, -1]
        return self.head(torch.relu(self.dense(torch.cat([self.user(users), h], 1)))).squeeze(1)


def rank0_views(root: Path) -> list:  # type: ignore[type-arg]
    """Every view of rank 0 of the run the hook wrote at `root`."""
    run = trainguard.open_run(f"file://{root}")
    source = run.source(0)
    builder = ViewBuilder(rank=0, save_interval=save_interval_of(run.info))
    return [v for seg in source.poll() for v in builder.views(seg, source.catalogue())]


def views_of(tmp_path: Path, dense_std: float) -> list:  # type: ignore[type-arg]
    torch.manual_seed(0)
    model = Recommender(dense_std)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tg.Hook(f"file://{tmp_path}", save_interval=1) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(3):
            opt.zero_grad()
            users, tokens = torch.randint(0, 300, (8,)), torch.randint(0, 50, (8, 5))
            loss = nn.functional.binary_cross_entropy_with_logits(model(users, tokens), torch.ones(8))
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
    return rank0_views(tmp_path)


def test_embedding_tables_and_an_identity_recurrent_matrix_are_no_poor_init(tmp_path: Path) -> None:
    # N(0, 1) tables are 2.8x PyTorch's largest fan-based target for their shape, which called them too large when
    # only names like `emb` were recognised
    rule = PoorWeightInitialization()
    assert [f for v in views_of(tmp_path, dense_std=0.1) for f in rule.update(v)] == []


def test_a_dense_kernel_initialised_n01_is_still_reported(tmp_path: Path) -> None:
    rule = PoorWeightInitialization()
    found = [f for v in views_of(tmp_path, dense_std=1.0) for f in rule.update(v)]
    assert [f.tensor for f in found] == ["dense.weight"]


def test_the_first_and_last_kernels_skip_lookup_tables(tmp_path: Path) -> None:
    view = next(v for v in views_of(tmp_path, dense_std=0.1) if any(n.startswith("grad/") for n in v.names))
    rows = view.rows(collections=["gradients"])
    first, last = KernelPair()(view, rows)  # type: ignore[misc]
    assert (view.names[first], view.names[last]) == ("grad/rnn.weight_ih_l0", "grad/head.weight")


def classifier_views(tmp_path: Path, *, relu_on_logits: bool, outputs: int = 10) -> list:  # type: ignore[type-arg]
    torch.manual_seed(0)
    layers: list[nn.Module] = [nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, outputs)]
    if relu_on_logits:
        layers.append(nn.ReLU())
    model = nn.Sequential(*layers)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with tg.Hook(f"file://{tmp_path}", save_interval=1) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(3):
            opt.zero_grad()
            x = torch.randn(32, 16)
            out = model(x)
            if outputs > 1:
                loss = nn.functional.cross_entropy(out, torch.randint(0, outputs, (32,)))
            else:
                loss = nn.functional.mse_loss(out.squeeze(1), x[:, 0].abs())
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
    return rank0_views(tmp_path)


def test_a_relu_on_a_classifiers_logits_is_named_at_the_start(tmp_path: Path) -> None:
    rule = DeadRelu()
    found = [f for v in classifier_views(tmp_path / "relu", relu_on_logits=True) for f in rule.update(v)]
    assert [(f.step, f.tensor) for f in found] == [(0, "act/3")]
    assert "clips the logits of a 10-class classifier at 0" in found[0].message
    quiet = DeadRelu()
    assert [
        f for v in classifier_views(tmp_path / "plain", relu_on_logits=False) for f in quiet.update(v)
    ] == []
    # a regression with non-negative targets may end in a ReLU: one output, no class to clip
    regression = DeadRelu()
    views = classifier_views(tmp_path / "regression", relu_on_logits=True, outputs=1)
    assert [f for v in views for f in regression.update(v)] == []


def test_a_sparse_embedding_tables_unsampled_rows_are_not_frozen(tmp_path: Path) -> None:
    # nn.Embedding(sparse=True) under SparseAdam: the gradient is sparse, so no statistics tell unsampled rows (most
    # of a Zipf-distributed item table) from frozen ones; their standing still is no blind zone
    torch.manual_seed(0)
    table = nn.Embedding(400, 8, sparse=True)
    head = nn.Linear(8, 1)
    model = nn.ModuleDict({"item": table, "head": head})
    opt = torch.optim.SparseAdam(list(table.parameters()), lr=1e-2)
    dense = torch.optim.Adam(head.parameters(), lr=1e-2)
    popular = torch.arange(200)  # half of the items never appear
    with tg.Hook(f"file://{tmp_path}", save_interval=1) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(60):
            opt.zero_grad()
            dense.zero_grad()
            items = popular[torch.randint(0, 200, (16,))]
            loss = head(table(items)).pow(2).mean()
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
            dense.step()
    views = rank0_views(tmp_path)
    assert not any(n == "grad/item.weight" for v in views for n in v.names)  # sparse: not captured
    rule = UnchangedTensor()
    assert [f.message for v in views for f in rule.update(v)] == []


class Factorisation(nn.Module):
    """Matrix factorisation with per-user and per-item biases: one-column tables initialised to zero, as
    recommenders do; the factor tables at `factor_std` (0: zero, so neither gets a gradient)."""

    def __init__(self, factor_std: float) -> None:
        super().__init__()
        self.user, self.item = nn.Embedding(200, 16), nn.Embedding(120, 16)
        self.user_bias, self.item_bias = nn.Embedding(200, 1), nn.Embedding(120, 1)
        for e in (self.user, self.item):
            nn.init.normal_(e.weight, std=factor_std) if factor_std else nn.init.zeros_(e.weight)
        for e in (self.user_bias, self.item_bias):
            nn.init.zeros_(e.weight)

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        u, i = pairs[:, 0], pairs[:, 1]
        dot = (self.user(u) * self.item(i)).sum(1)
        return dot + self.user_bias(u).squeeze(1) + self.item_bias(i).squeeze(1)


def factorisation_findings(tmp_path: Path, factor_std: float) -> list:  # type: ignore[type-arg]
    torch.manual_seed(0)
    model = Factorisation(factor_std)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    with tg.Hook(f"file://{tmp_path}", save_interval=1) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(3):
            pairs = torch.stack([torch.randint(0, 200, (64,)), torch.randint(0, 120, (64,))], 1)
            loss = nn.functional.binary_cross_entropy_with_logits(model(pairs), torch.rand(64).round())
            opt.zero_grad()
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
    rule = PoorWeightInitialization()
    return [f for v in rank0_views(tmp_path) for f in rule.update(v)]


def test_zero_bias_tables_of_a_factorisation_are_no_poor_init(tmp_path: Path) -> None:
    # two zero one-column tables read as "2 of 4 kernels entirely zero" on every run of two recommenders
    assert factorisation_findings(tmp_path, factor_std=0.1) == []


def test_zero_factor_tables_are_still_reported(tmp_path: Path) -> None:
    # two zero factor tables multiplied together give each other no gradient: the model never learns
    found = factorisation_findings(tmp_path, factor_std=0.0)
    assert [f.tensor for f in found] == ["user.weight"]
    assert "2 of 2 kernels are entirely zero" in found[0].message
