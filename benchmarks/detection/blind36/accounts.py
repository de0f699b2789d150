"""Account scripts of the thirty-sixth blind split: a credit-card limit-utilisation forecaster over monthly statements,
and a phishing-URL classifier on hashed character trigrams.

`utilisation`: 24 monthly statements of a card (the balance, the limit, the payment and the purchases); each holder
spends a habitual share of the limit, pays back a habitual share of the balance, and now and then a month of heavy
spending; the issuer raises the limit of many cards once in the window, and suspends a few cards (a limit of 0) for a
month; each month's utilisation (balance over the limit, 0 on a suspended card), payment and purchases over the limit; a
GRU over the months, a linear layer on its last state; MSE on next month's utilisation; scored by the held-out R^2.
`phishing`: URLs of benign sites (a scheme, a word or two of a domain, a common top-level domain, a path) and of
phishing pages (a brand name in a subdomain, hyphens, digits, an '@', an IP address, a rare top-level domain, long query
strings), either scheme on both; the lower-cased URL's character trigrams hashed into 2048 buckets; an embedding bag
(mean) and a ReLU MLP; BCE with logits weighted by the negatives over the positives; scored by the held-out AUC. Bugs:
the utilisation divided by a suspended card's limit of 0; the utilisation taken against the limit at opening; the
positive weight given the count of negatives; fastText's rate of 1.0 kept under Adam; the URL stripped to letters and
digits before hashing; the training phishing URLs mostly on http.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

MONTHS = 24
"""Statements in a window; the target is the month after."""


def _statements(g: torch.Generator, n: int) -> tuple[torch.Tensor, ...]:
    """Balance, limit, payment, purchases float[n, MONTHS + 1] each (the last month is the one to forecast)."""
    m = MONTHS + 1
    spend = 0.05 + 0.3 * torch.rand(n, 1, generator=g)
    repay = 0.1 + 0.9 * torch.rand(n, 1, generator=g) ** 2
    start = 1000 * (1 + 9 * torch.rand(n, 1, generator=g))
    raised = torch.rand(n, generator=g) < 0.6
    raise_at = torch.randint(1, m, (n, 1), generator=g)
    months = torch.arange(m).view(1, m)
    limit = start * (1 + 1.5 * (raised.view(n, 1) & (months >= raise_at)).float())
    suspended = (torch.rand(n, m, generator=g) < 0.01) & (months > 0)
    limit = torch.where(suspended, 0.0, limit)
    balance = torch.zeros(n, m)
    payment, purchases = torch.zeros(n, m), torch.zeros(n, m)
    owed = start[:, 0] * 0.3 * torch.rand(n, generator=g)
    for t in range(m):
        heavy = (torch.rand(n, generator=g) < 0.08).float()
        buy = limit[:, t] * spend[:, 0] * (1 + 2 * heavy) * torch.exp(0.3 * torch.randn(n, generator=g))
        pay = owed * (repay[:, 0] * (0.8 + 0.4 * torch.rand(n, generator=g))).clamp(max=1)
        owed = ((owed - pay) * 1.015 + buy).clamp(min=0)
        owed = torch.minimum(owed, limit[:, t].clamp(min=start[:, 0]) * 1.1)
        balance[:, t], payment[:, t], purchases[:, t] = owed, pay, buy
    return balance, limit, payment, purchases


def _utilisation(balance: torch.Tensor, limit: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The balance over the limit, 0 while the card is suspended (a limit of 0)."""
    if bug == "utilisation_over_suspended_zero_limit":
        return balance / limit
    if bug == "utilisation_against_opening_limit":
        return balance / limit[:, :1]
    return torch.where(limit > 0, balance / limit.clamp(min=1.0), 0.0)


def _sequences(raw: tuple[torch.Tensor, ...], bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Monthly inputs float[n, MONTHS, 3] (utilisation, payment and purchases over the limit) and next month's
    utilisation float[n]."""
    balance, limit, payment, purchases = raw
    util = _utilisation(balance, limit, bug)
    base = limit if bug != "utilisation_against_opening_limit" else limit[:, :1].expand_as(limit)
    safe = base.clamp(min=1.0)
    x = torch.stack([util, payment / safe, purchases / safe], -1)
    return x[:, :MONTHS], util[:, MONTHS]


class UtilisationRNN(nn.Module):
    """A recurrent layer (`cell`: nn.GRU, or nn.RNN) of `hidden` over the months, a linear layer on its last state."""

    def __init__(self, hidden: int, cell: type[nn.RNNBase]) -> None:
        super().__init__()
        self.rnn = cell(3, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1]).squeeze(-1)


def utilisation(run: Run) -> None:
    """A utilisation GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at
    `lr` (2e-3). Scored by the held-out R^2 of next month's utilisation."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _sequences(_statements(g, 1200), run.bug)
    x_v, y_v = _sequences(_statements(g, 500), None)
    torch.manual_seed(run.seed)
    model = UtilisationRNN(run.k("hidden", 32), nn.GRU)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


FASTTEXT_LR = 1.0
"""The fastText classifier's learning rate (plain SGD), the baseline this network replaced."""
BUCKETS = 2048
"""Hash buckets of the character trigrams."""
WORDS = ["shop", "news", "blue", "garden", "cloud", "data", "home", "city", "travel", "music", "photo", "green",
         "sport", "food", "book", "tech", "river", "school", "health", "market"]  # fmt: skip
BRANDS = ["paypal", "apple", "amazon", "netflix", "bank", "microsoft", "office", "dhl"]
LURES = ["login", "verify", "secure", "account", "update", "signin", "confirm", "billing"]
TLDS, RARE_TLDS = ["com", "org", "net", "de", "co.uk"], ["xyz", "top", "tk", "info", "club"]


def _url(g: torch.Generator, phishing: bool, scheme: str) -> str:
    """One URL of a benign site or a phishing page."""

    def pick(options: list[str]) -> str:
        return options[int(torch.randint(0, len(options), (1,), generator=g))]

    def chance(p: float) -> bool:
        return float(torch.rand(1, generator=g)) < p

    def digits(k: int) -> str:
        return "".join(str(int(d)) for d in torch.randint(0, 10, (k,), generator=g))

    if not phishing:
        host = pick(WORDS) + (pick(WORDS) if chance(0.5) else "") + "." + pick(TLDS)
        if chance(0.3):
            host = "www." + host
        path = (
            "/" + pick(WORDS) + ("/" + (pick(LURES) if chance(0.4) else pick(WORDS)) if chance(0.6) else "")
        )
        if chance(0.15):
            path += "?id=" + digits(3)
        if chance(0.15):
            path += "-" + pick(WORDS)
        return f"{scheme}://{host}{path}"
    if chance(0.6):  # a lookalike on an ordinary domain
        host = pick(WORDS) + ("-" if chance(0.3) else "") + pick(WORDS) + "." + pick(TLDS)
        path = "/" + pick(WORDS) + "/" + pick(LURES) + ("?id=" + digits(3) if chance(0.3) else "")
        return f"{scheme}://{host}{path}"
    if chance(0.15):
        host = ".".join(str(int(v)) for v in torch.randint(1, 255, (4,), generator=g))
    else:
        host = pick(BRANDS) + ("-" if chance(0.6) else ".") + pick(LURES)
        host += (digits(2) if chance(0.4) else "") + "." + (pick(RARE_TLDS) if chance(0.6) else pick(TLDS))
    path = "/" + pick(LURES) + ("@" + pick(BRANDS) if chance(0.2) else "")
    if chance(0.5):
        path += "?session=" + digits(6)
    return f"{scheme}://{host}{path}"


def _urls(g: torch.Generator, n: int, http_for_phishing: bool) -> tuple[list[str], torch.Tensor]:
    """`n` URLs and the phishing label float[n] (30 % phishing); `http_for_phishing`: the phishing URLs come mostly
    on http and the benign ones on https."""
    label = (torch.rand(n, generator=g) < 0.3).float()
    urls = []
    for is_phish in label.tolist():
        p_http = (0.95 if is_phish else 0.05) if http_for_phishing else 0.4
        scheme = "http" if float(torch.rand(1, generator=g)) < p_http else "https"
        urls.append(_url(g, bool(is_phish), scheme))
    return urls, label


def _trigrams(urls: list[str], bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The URLs' lower-cased character trigrams hashed into BUCKETS (a polynomial hash), flat long[...] with the
    offsets of each URL's run."""
    ids: list[int] = []
    offsets: list[int] = []
    for url in urls:
        text = url.lower()
        if bug == "url_stripped_to_alphanumerics":
            text = "".join(ch for ch in text if ch.isalnum())
        offsets.append(len(ids))
        padded = f"<{text}>"
        ids += [
            (ord(a) * 961 + ord(b) * 31 + ord(c)) % BUCKETS for a, b, c in zip(padded, padded[1:], padded[2:])
        ]
    return torch.tensor(ids), torch.tensor(offsets)


class TrigramNet(nn.Module):
    """An embedding bag (mean) of `dim` over the trigram buckets, a ReLU layer of `hidden`, a linear layer."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(BUCKETS, dim, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.bag(ids, offsets)).squeeze(-1)


def _rows(ids: torch.Tensor, offsets: torch.Tensor, pick: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The trigrams and offsets of the URLs `pick`, as a loader's collate gathers them."""
    ends = torch.cat([offsets[1:], torch.tensor([len(ids)])])
    parts = [ids[int(offsets[i]) : int(ends[i])] for i in pick.tolist()]
    lengths = torch.tensor([len(p) for p in parts])
    return torch.cat(parts), torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])


def phishing(run: Run) -> None:
    """A trigram net of `dim` (32) and `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD,
    RMSprop, Adagrad) at `lr` (3e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    urls, y = _urls(g, 1500, http_for_phishing=run.bug == "training_phishing_urls_on_http")
    urls_v, y_v = _urls(g, 600, http_for_phishing=False)
    ids, offsets = _trigrams(urls, run.bug)
    ids_v, offsets_v = _trigrams(urls_v, run.bug if run.bug == "url_stripped_to_alphanumerics" else None)
    n_pos = float(y.sum())
    weight = len(y) - n_pos if run.bug == "positive_weight_given_negative_count" else (len(y) - n_pos) / n_pos
    pos_weight = torch.tensor(weight)
    torch.manual_seed(run.seed)
    model = TrigramNet(run.k("dim", 32), run.k("hidden", 64))
    opt = optimizers.registered(run, model, 3e-3)
    if run.bug == "fasttext_rate_kept_under_adam":
        for group in opt.param_groups:
            group["lr"] = FASTTEXT_LR
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(ids_v, offsets_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(
            model(*_rows(ids, offsets, pick)), y[pick], pos_weight=pos_weight
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
