"""A numpy run whose gradients vanish: 8 sigmoid layers initialised with tiny weights.

Each sigmoid layer scales the backward signal by at most 0.25 times the (tiny) weights, so the
first layers' gradients are many orders of magnitude below the last one's and they never learn.

    trainguard run -- python examples/numpy_vanishing.py    # vanishing_gradient fires (notify)
"""

from numpy_mlp import MLP, train

if __name__ == "__main__":
    train(MLP([20] + [32] * 8 + [10], activation="sigmoid", init_scale=0.05), steps=2000, lr=0.05)
