"""A small multi-layer perceptron in plain numpy, shared by the numpy examples.

Forward, backward and an SGD step by hand, with every tensor TrainGuard should see recorded
through `trainguard.Recorder`: weights, biases, gradients (`grad/<name>`), activations
(`act/<layer>`) and the loss. The data are a fixed random "teacher" network's labels, so the
task is learnable and a healthy run's loss falls steadily.
"""

from __future__ import annotations

import itertools

import numpy as np

import trainguard


def make_data(*, n: int, features: int, classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Return inputs float32[n, features] and labels int64[n] from a fixed random teacher."""
    rng = np.random.default_rng(seed)
    teacher = np.random.default_rng(1234).normal(size=(features, classes))
    x = rng.normal(size=(n, features)).astype(np.float32)
    y = np.argmax(x @ teacher + 0.3 * rng.normal(size=(n, classes)), axis=1)
    return x, y


class MLP:
    """Dense layers with one activation (relu, sigmoid or tanh) and a softmax cross-entropy head."""

    def __init__(
        self, sizes: list[int], *, activation: str = "relu", init_scale: float | None = None, seed: int = 0
    ):
        rng = np.random.default_rng(seed)
        self.activation = activation
        self.params: dict[str, np.ndarray] = {}
        for i, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
            scale = init_scale if init_scale is not None else np.sqrt(2.0 / fan_in)  # He init by default
            self.params[f"fc{i}.weight"] = (rng.normal(size=(fan_out, fan_in)) * scale).astype(np.float32)
            self.params[f"fc{i}.bias"] = np.zeros(fan_out, np.float32)
        self.layers = len(sizes) - 1

    def _act(self, z: np.ndarray) -> np.ndarray:
        if self.activation == "relu":
            return np.maximum(z, 0)
        if self.activation == "sigmoid":
            return 1 / (1 + np.exp(-z))
        return np.tanh(z)

    def _act_grad(self, a: np.ndarray) -> np.ndarray:
        if self.activation == "relu":
            return (a > 0).astype(a.dtype)
        if self.activation == "sigmoid":
            return a * (1 - a)
        return 1 - a * a

    def loss(self, x: np.ndarray, y: np.ndarray) -> float:
        return self.forward_backward(x, y, grads=False)[0]

    def forward_backward(self, x: np.ndarray, y: np.ndarray, *, grads: bool = True):
        """Return (mean cross-entropy, gradients by parameter name, activations by layer name)."""
        acts, h = {}, x
        inputs = []
        for i in range(self.layers):
            inputs.append(h)
            z = h @ self.params[f"fc{i}.weight"].T + self.params[f"fc{i}.bias"]
            h = self._act(z) if i < self.layers - 1 else z
            if i < self.layers - 1:
                acts[f"act/fc{i}"] = h
        logits = h - h.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        loss = float(-np.log(p[np.arange(len(y)), y] + 1e-12).mean())
        if not grads:
            return loss, {}, acts
        g: dict[str, np.ndarray] = {}
        d = p
        d[np.arange(len(y)), y] -= 1
        d /= len(y)
        for i in reversed(range(self.layers)):
            g[f"fc{i}.weight"] = d.T @ inputs[i]
            g[f"fc{i}.bias"] = d.sum(axis=0)
            if i:
                d = (d @ self.params[f"fc{i}.weight"]) * self._act_grad(inputs[i])
        return loss, g, acts

    def sgd(self, grads: dict[str, np.ndarray], *, lr: float) -> None:
        for name, gr in grads.items():
            self.params[name] -= lr * gr

    def record(
        self, rec: trainguard.Recorder, grads: dict[str, np.ndarray], acts: dict[str, np.ndarray]
    ) -> None:
        """Hand this step's tensors to the recorder (it ignores them on steps it does not save)."""
        for order, (name, w) in enumerate(self.params.items()):
            coll = "weights" if name.endswith("weight") else "biases"
            rec.record_tensor(name, w, collection=coll, module=name.rsplit(".", 1)[0], order=order // 2)
            rec.record_tensor(
                f"grad/{name}",
                grads[name],
                collection="gradients",
                module=name.rsplit(".", 1)[0],
                order=order // 2,
            )
        for order, (name, a) in enumerate(acts.items()):
            rec.record_tensor(name, a, collection="activations", activation=self.activation, order=order)


def train(
    model: MLP,
    *,
    steps: int,
    lr: float,
    batch: int = 64,
    features: int = 20,
    classes: int = 10,
    eval_every: int = 50,
) -> int:
    """Train under a Recorder (inert without TRAINGUARD_OUT); stop early when TrainGuard asks. Return the steps run."""
    x, y = make_data(n=8192, features=features, classes=classes, seed=0)
    xv, yv = make_data(n=1024, features=features, classes=classes, seed=1)
    rng = np.random.default_rng(0)
    with trainguard.Recorder() as rec:
        for step in range(steps):
            idx = rng.integers(0, len(x), batch)
            loss, grads, acts = model.forward_backward(x[idx], y[idx])
            model.record(rec, grads, acts)
            model.sgd(grads, lr=lr)
            rec.record_scalar("loss", loss)
            if step % eval_every == 0:
                rec.record_scalar("val_loss", model.loss(xv, yv), mode="eval")
            if step % 100 == 0:
                print(f"step {step}: loss {loss:.4f}", flush=True)
            rec.step()
            if rec.should_stop():
                print(f"TrainGuard asked to stop at step {step}", flush=True)
                return step + 1
    return steps
