"""Clamps the temperature to at least 0.01 "to avoid dividing by a tiny number": below that the
lookup never gets harder, so it does not tend to the hard lookup as the temperature goes to 0.

expect-fail: ch01_temperature, ch01_stability
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    temperature = max(temperature, 1e-2)
    scores = query @ keys.T / temperature
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = exps / exps.sum(axis=-1, keepdims=True)
    return weights @ values, weights
