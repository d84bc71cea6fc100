"""Multiplies the similarities by the temperature instead of dividing: a small temperature then
flattens the weights instead of sharpening them.

expect-fail: ch01_temperature, ch01_batch, ch01_stability
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    scores = query @ keys.T * temperature
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = exps / exps.sum(axis=-1, keepdims=True)
    return weights @ values, weights
