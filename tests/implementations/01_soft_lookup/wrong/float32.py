"""Converts everything to float32 "to save memory": the results come back in float32, and
accurate only to about 1e-7 instead of 1e-16.

expect-fail: ch01_weights_one_query, ch01_output_one_query, ch01_temperature, ch01_batch, ch01_stability
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    query, keys, values = (np.asarray(a, dtype=np.float32) for a in (query, keys, values))
    scores = query @ keys.T / np.float32(temperature)
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = exps / exps.sum(axis=-1, keepdims=True)
    return weights @ values, weights
