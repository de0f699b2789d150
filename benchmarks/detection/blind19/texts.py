"""Text scripts of the nineteenth blind split: an emotion classifier (a CNN over word embeddings) and a dialogue-intent
classifier (a bag of embeddings) trained with class weights on imbalanced intents.

`emotions`: sentences of 16 word ids from a vocabulary of 400, each carrying two or three cue words of its emotion (six
emotions, eight cue words each) among filler words, with a cue of another emotion now and then and a tenth of the labels
flipped; a small training set of 600 sentences; an embedding of 48, a width-3 convolution, a max over time, dropout and
a linear layer; cross-entropy; scored by the held-out accuracy. `intents`: utterances of 3-14 word ids from a vocabulary
of 300 with one or two cue words of one of ten intents, drawn with geometrically falling frequency; an `nn.EmbeddingBag`
(mean) over the flattened utterances with their offsets, an MLP whose output bias starts at the intents' log prior;
cross-entropy weighted per example by the 'balanced' class weights (n / (classes * count)); scored by the held-out
balanced accuracy (the mean recall over intents). Bugs: the optimizer built over the classifier's parameters only; the
dropout layer defined but never applied; the labels numbered by their first appearance in the training file; the class
weights left as raw inverse frequencies; every utterance of a batch cut to the batch's shortest; the log-prior bias
meant for the output layer written into the hidden layer too; the embeddings loaded by `from_pretrained`, which freezes
them.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

WORDS, LENGTH, EMOTIONS, CUES = 400, 16, 6, 8
"""Vocabulary, sentence length, emotions and cue words per emotion (cue ids from 1, filler after them)."""


def _sentences(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Word ids long[n, LENGTH] and emotions long[n]."""
    y = torch.randint(0, EMOTIONS, (n,), generator=g)
    first_filler = 1 + EMOTIONS * CUES
    x = torch.randint(first_filler, WORDS, (n, LENGTH), generator=g)
    for i in range(n):
        slots = torch.randperm(LENGTH, generator=g)
        cues = 2 + int(torch.randint(0, 2, (1,), generator=g))
        for s in slots[:cues]:
            x[i, s] = 1 + int(y[i]) * CUES + int(torch.randint(0, CUES, (1,), generator=g))
        if float(torch.rand(1, generator=g)) < 0.3:
            other = (int(y[i]) + 1 + int(torch.randint(0, EMOTIONS - 1, (1,), generator=g))) % EMOTIONS
            x[i, slots[cues]] = 1 + other * CUES + int(torch.randint(0, CUES, (1,), generator=g))
    flip = torch.rand(n, generator=g) < 0.1
    y = torch.where(flip, torch.randint(0, EMOTIONS, (n,), generator=g), y)
    return x, y


class EmotionCNN(nn.Module):
    """An embedding of `dim`, a width-3 convolution of `width` channels, ReLU, a max over time, dropout, a linear
    layer to the emotions."""

    def __init__(self, dim: int, width: int, dropout: bool = True) -> None:
        super().__init__()
        self.embed = nn.Embedding(WORDS, dim)
        self.conv = nn.Conv1d(dim, width, 3, padding=1)
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(width, EMOTIONS)
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.conv(self.embed(x).transpose(1, 2))).amax(-1)
        if self.dropout:
            h = self.drop(h)
        return self.fc(h)


def emotions(run: Run) -> None:
    """An emotion CNN with embeddings of `dim` (48) and `width` (64) filters, batches of `batch` (32), `opt` (Adam; or
    AdamW, RMSprop, momentum SGD) at `lr` (2e-3), optionally decayed by a cosine over the run (`cosine`). Scored by the
    held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _sentences(g, 600)
    x_v, y_v = _sentences(g, 1000)
    if run.bug == "label_ids_by_first_appearance":
        # the label vocabulary built from the training file in the order the names first appear
        seen: list[int] = []
        for label in y.tolist():
            if label not in seen:
                seen.append(label)
        y = torch.tensor([seen.index(label) for label in y.tolist()])
    torch.manual_seed(run.seed)
    model = EmotionCNN(run.k("dim", 48), run.k("width", 64), run.bug != "dropout_defined_but_never_applied")
    if run.bug == "optimizer_given_head_parameters":
        # the optimizer of a recipe that fine-tunes only the head of a pretrained encoder
        opt = optimizers.make_optimizer(run.k("opt", "adam"), model.fc.parameters(), run.k("lr", 2e-3))
        run.hook.register_module(model)
        run.hook.register_optimizer(opt)
    else:
        opt = optimizers.registered(run, model, 2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps) if run.k("cosine", False) else None
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


VOCAB, INTENTS, INTENT_CUES = 300, 10, 5
"""Vocabulary, intents and cue words per intent (cue ids from 1, filler after them)."""


def _utterances(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The utterances' word ids flattened long[total], their lengths long[n] and intents long[n]."""
    freq = 0.75 ** torch.arange(INTENTS, dtype=torch.float)
    y = torch.multinomial(freq / freq.sum(), n, True, generator=g)
    lengths = torch.randint(3, 15, (n,), generator=g)
    first_filler = 1 + INTENTS * INTENT_CUES
    words = []
    for i in range(n):
        u = torch.randint(first_filler, VOCAB, (int(lengths[i]),), generator=g)
        slots = torch.randperm(int(lengths[i]), generator=g)
        cues = 1 + int(torch.rand(1, generator=g) < 0.5)
        for s in slots[:cues]:
            u[s] = 1 + int(y[i]) * INTENT_CUES + int(torch.randint(0, INTENT_CUES, (1,), generator=g))
        if float(torch.rand(1, generator=g)) < 0.25:
            other = int(torch.randint(0, INTENTS, (1,), generator=g))
            u[slots[cues]] = 1 + other * INTENT_CUES + int(torch.randint(0, INTENT_CUES, (1,), generator=g))
        words.append(u)
    return torch.cat(words), lengths, y


def balanced_accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    """The mean over the classes present in `y` of the share of their examples predicted right."""
    pred = logits.argmax(-1)
    recalls = [float((pred[y == c] == c).float().mean()) for c in y.unique()]
    return sum(recalls) / len(recalls)


class IntentBag(nn.Module):
    """A mean `nn.EmbeddingBag` of `dim`, a hidden layer of `hidden`, a linear layer to the intents."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(VOCAB, dim, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, INTENTS))

    def forward(self, words: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.bag(words, offsets))


def _batch(
    words: torch.Tensor, lengths: torch.Tensor, starts: torch.Tensor, pick: torch.Tensor, trim: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """The picked utterances' words flattened and their offsets into them (`trim`: each cut to the batch's shortest
    utterance, as a collate function that stacks rows would)."""
    lens = lengths[pick]
    if trim:
        lens = torch.full_like(lens, int(lens.min()))
    chunks = [words[int(starts[i]) : int(starts[i]) + int(n)] for i, n in zip(pick, lens, strict=True)]
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lens.cumsum(0)[:-1]])
    return torch.cat(chunks), offsets


def intents(run: Run) -> None:
    """An intent classifier (a bag of embeddings of `dim` (64), a hidden layer of `hidden` (64)), batches of `batch`
    (64), `opt` (Adam; or momentum SGD, Adagrad, NAdam) at `lr` (3e-3), the loss weighted by the balanced class
    weights. Scored by the held-out balanced accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    words, lengths, y = _utterances(g, 3000)
    words_v, lengths_v, y_v = _utterances(g, 1500)
    starts = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    offsets_v = torch.cat([torch.zeros(1, dtype=torch.long), lengths_v.cumsum(0)[:-1]])
    counts = torch.bincount(y, minlength=INTENTS).float()
    if run.bug == "class_weights_raw_inverse_frequency":
        weights = len(y) / counts
    else:
        weights = len(y) / (INTENTS * counts)
    torch.manual_seed(run.seed)
    model = IntentBag(run.k("dim", 64), run.k("hidden", 64))
    # the output bias started at the intents' log prior, so the first steps need not learn the imbalance
    prior = torch.log(counts / counts.sum())
    with torch.no_grad():
        for layer in model.mlp:
            if isinstance(layer, nn.Linear) and (
                layer.out_features == INTENTS or run.bug == "prior_bias_applied_to_every_layer"
            ):
                # the bug: the loop meant for the output layer also reaches the hidden one (its mean log prior)
                layer.bias.copy_(prior if layer.out_features == INTENTS else prior.mean())
    if run.bug == "embeddings_loaded_with_from_pretrained":
        # the embedding table initialised from a saved matrix; from_pretrained freezes it by default
        model.bag = nn.EmbeddingBag.from_pretrained(model.bag.weight.detach().clone(), mode="mean")
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)

    def balanced_held_out() -> float:
        return balanced_accuracy(model(words_v, offsets_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        flat, offsets = _batch(words, lengths, starts, pick, run.bug == "batch_trimmed_to_shortest_utterance")
        logits = model(flat, offsets)
        loss = (F.cross_entropy(logits, y[pick], reduction="none") * weights[y[pick]]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_balanced_accuracy", balanced_held_out):
            break
