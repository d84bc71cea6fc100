"""Subtracts the largest similarity of the whole batch (scores.max() without an axis) instead of
each query's own: fine for one query, but in a batch a query with small similarities underflows
to exp(...) = 0 everywhere and gets 0 / 0 = nan.

expect-fail: ch01_stability
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    scores = query @ keys.T / temperature
    exps = np.exp(scores - scores.max())
    weights = exps / exps.sum(axis=-1, keepdims=True)
    return weights @ values, weights
