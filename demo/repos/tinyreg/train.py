"""Train a ridge regression model by full-batch gradient descent and report test MSE."""

import argparse
import json
import os

import numpy as np


def load_csv(path, limit=None):
    rows = np.loadtxt(path, delimiter=",", skiprows=1)
    if limit is not None:
        rows = rows[:limit]
    return rows[:, :-1], rows[:, -1]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True, help="JSON file with lr, epochs and l2")
    parser.add_argument("--epochs", type=int, help="override the config's number of epochs")
    parser.add_argument("--lr", type=float, help="override the config's learning rate")
    parser.add_argument("--limit", type=int, help="use only the first N training examples")
    args = parser.parse_args()

    with open(args.config) as f:
        config = json.load(f)
    epochs = args.epochs if args.epochs is not None else config["epochs"]
    lr = args.lr if args.lr is not None else config["lr"]

    x_train, y_train = load_csv("data/train.csv", args.limit)
    x_test, y_test = load_csv("data/test.csv")
    print(f"Loaded {len(y_train)} training examples and {len(y_test)} test examples")

    w = np.zeros(x_train.shape[1])
    b = 0.0
    for epoch in range(1, epochs + 1):
        err = x_train @ w + b - y_train
        loss = float(np.mean(err**2) + config["l2"] * np.sum(w**2))
        w -= lr * (2 * x_train.T @ err / len(y_train) + 2 * config["l2"] * w)
        b -= lr * 2 * float(np.mean(err))
        if epoch % 10 == 0 or epoch == epochs:
            print(f"epoch {epoch}/{epochs}: train loss {loss:.4f}")

    mse = float(np.mean((x_test @ w + b - y_test) ** 2))
    print(f"Test MSE: {mse:.4f}")
    os.makedirs("results", exist_ok=True)
    with open("results/metrics.json", "w") as f:
        json.dump({"test_mse": round(mse, 4), "epochs": epochs}, f)


if __name__ == "__main__":
    main()
