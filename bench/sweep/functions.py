"""Synthetic test functions for bench/sweep: domain, optimum, and f(x).
Each is minimized; `noisy(f, sigma, rng)` adds Gaussian noise to what the
optimizer sees while regret is measured on the noise-free value."""
import math

import numpy as np

# Hartmann6 (Dixon & Szego 1978; the constants as in the Virtual Library of Simulation Experiments).
_H6_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_H6_A = np.array([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
                  [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]])
_H6_P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
                         [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]])


def branin(x):
    x1, x2 = x
    b, c, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1 * x1 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


def hartmann6(x):
    x = np.asarray(x)
    return float(-np.sum(_H6_ALPHA * np.exp(-np.sum(_H6_A * (x - _H6_P) ** 2, axis=1))))


def rosenbrock(x):
    x = np.asarray(x)
    return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


def ackley(x):
    x = np.asarray(x)
    d = len(x)
    return float(-20 * math.exp(-0.2 * math.sqrt(np.sum(x * x) / d))
                 - math.exp(np.sum(np.cos(2 * math.pi * x)) / d) + 20 + math.e)


# name: (function, bounds per dimension, minimum, noise sigma of the noisy variant)
FUNCTIONS = {
    "branin": (branin, [(-5, 10), (0, 15)], 0.397887, 1.0),
    "hartmann6": (hartmann6, [(0, 1)] * 6, -3.32237, 0.05),
    "rosenbrock10": (rosenbrock, [(-5, 10)] * 10, 0.0, 10.0),
    "ackley5": (ackley, [(-32.768, 32.768)] * 5, 0.0, 0.5),
}
