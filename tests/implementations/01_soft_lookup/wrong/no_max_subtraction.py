"""The textbook softmax, exp(s) / sum(exp(s)), without subtracting the max: similarities of a
few hundred, or a small temperature, overflow np.exp to inf and give inf / inf = nan.

expect-fail: ch01_temperature, ch01_stability
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    exps = np.exp(query @ keys.T / temperature)
    weights = exps / exps.sum(axis=-1, keepdims=True)
    return weights @ values, weights
