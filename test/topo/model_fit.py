"""The fit both calibrations share (calibrate.py: 2x H200, calibrate_choice.py:
a node of L GPUs priced as the choice): the spike rule test_topo_plan uses,
the model of one class, t = lat + wire / (B * eff) + fill * (1 - exp(-wire / w))
with B = 18 NVLinks x 20.6 GB/s, and a seeded random search minimising the
worst relative error.  Points are (wire bytes, measured us, ...)."""
import math
import random

NVLINK = 20.6
B = 18 * NVLINK


def spike(rows, i):
    """a single-run outlier: more than 10% off both neighbouring sizes in the
    same direction, alone or together with one adjacent size (a pair, both
    off both sizes around the pair); the smallest size, latency-bound like
    the next one, more than 10% off that one"""
    t = [r[1] for r in rows]
    n = len(t)

    def off(v, around):
        return len(around) == 2 and all(abs(v - x) / x > 0.10 for x in around) and \
            (v - around[0]) * (v - around[1]) > 0

    if i == 0 and n > 1:
        return abs(t[0] - t[1]) / t[1] > 0.10
    if 0 < i < n - 1 and off(t[i], [t[i - 1], t[i + 1]]):
        return True
    for a in (i - 1, i):   # the pair (a, a + 1) holding i
        if a >= 1 and a + 2 < n and off(t[a], [t[a - 1], t[a + 2]]) and \
                off(t[a + 1], [t[a - 1], t[a + 2]]) and (t[a] - t[a - 1]) * (t[a + 1] - t[a - 1]) > 0:
            return True
    return False


def model(p, wire):
    lat, eff, fill, w = p
    return lat + wire / (B * eff * 1e3) + fill * (1 - math.exp(-wire / w))


def worst(p, pts):
    return max(abs(model(p, w) - t) / t for w, t, *_ in pts)


def search(start, pts, eff_min):
    random.seed(1)
    best, be = start, worst(start, pts)
    for it in range(40000):
        scale = 0.5 if it < 20000 else 0.1
        cand = (max(1.0, best[0] * (1 + random.gauss(0, scale))),
                min(1.2, max(eff_min, best[1] * (1 + random.gauss(0, scale / 2)))),
                max(0.0, best[2] * (1 + random.gauss(0, scale)) + random.gauss(0, 0.5)),
                max(1e3, best[3] * math.exp(random.gauss(0, scale * 2))))
        e = worst(cand, pts)
        if e < be:
            best, be = cand, e
    return best, be


def fit(pts, eff_min):
    """two starts: a slow large-message curve, and a latency-bound one with a
    short fill (the resident kernel's flat run then its rise got stuck in
    the first's local minimum); the better of the two"""
    fits = [search(s0, pts, eff_min) for s0 in ((10.0, 0.9, 10.0, 1e6),
                                                (min(t for _, t, *_ in pts), 0.5, 2.0, 1e4))]
    return min(fits, key=lambda f: f[1])
