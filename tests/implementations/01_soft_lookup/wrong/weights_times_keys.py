"""Averages the keys instead of the values: output = weights @ keys. The weights are right;
the output has the keys' width d instead of d_v.

expect-fail: ch01_output_one_query, ch01_temperature, ch01_batch, ch01_stability
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    scores = query @ keys.T / temperature
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = exps / exps.sum(axis=-1, keepdims=True)
    return weights @ keys, weights
