"""Applies the temperature with an in-place division, query /= temperature: the numbers are
right, but the caller's query array is changed, so a second lookup with it is wrong.

expect-fail: ch01_temperature, ch01_batch
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    query /= temperature
    scores = query @ keys.T
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = exps / exps.sum(axis=-1, keepdims=True)
    return weights @ values, weights
