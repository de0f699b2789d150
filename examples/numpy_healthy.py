"""A healthy numpy training run: a 2-hidden-layer ReLU MLP learning a teacher's labels.

trainguard run -- python examples/numpy_healthy.py      # exits 0, no warnings
"""

from numpy_mlp import MLP, train

if __name__ == "__main__":
    train(MLP([20, 64, 64, 10]), steps=800, lr=0.1)
