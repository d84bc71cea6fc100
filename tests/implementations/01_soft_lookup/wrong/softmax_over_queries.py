"""Softmax over axis 0: right for one query (a 1-D array has only that axis), but for a batch
it normalises each key's column over the queries instead of each query's row over the keys.

expect-fail: ch01_batch, ch01_stability
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    scores = query @ keys.T / temperature
    exps = np.exp(scores - scores.max(axis=0, keepdims=True))
    weights = exps / exps.sum(axis=0, keepdims=True)
    return weights @ values, weights
