"""Normalises by exps.sum() without an axis: one query is right, but a batch shares one
denominator, so the weights of the whole batch sum to 1 instead of each row.

expect-fail: ch01_batch, ch01_stability
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    scores = query @ keys.T / temperature
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = exps / exps.sum()
    return weights @ values, weights
