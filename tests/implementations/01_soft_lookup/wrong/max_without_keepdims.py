"""Subtracts scores.max(axis=-1) without keepdims=True: for one query a scalar, fine; for a
batch (m, n) - (m,) broadcasts along the wrong axis (an error when m != n, silently wrong
numbers when m == n).

expect-fail: ch01_batch, ch01_stability
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    scores = query @ keys.T / temperature
    exps = np.exp(scores - scores.max(axis=-1))
    weights = exps / exps.sum(axis=-1, keepdims=True)
    return weights @ values, weights
