"""Normalises the similarities by their sum instead of taking a softmax: the "weights" sum to 1
but can be negative or infinite, and q = [1, 0], K = I gives [1, 0], a hard lookup.

expect-fail: ch01_weights_one_query, ch01_output_one_query, ch01_temperature, ch01_batch, ch01_stability
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    scores = query @ keys.T / temperature
    weights = scores / scores.sum(axis=-1, keepdims=True)
    return weights @ values, weights
