"""Special-cases tiny temperatures with np.argmax ("the softmax is one-hot anyway"): when two keys
tie for the best similarity, argmax gives all the weight to the first instead of splitting it.

expect-fail: ch01_stability
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    scores = query @ keys.T
    if temperature < 1e-5:
        weights = np.eye(keys.shape[0])[np.argmax(scores, axis=-1)]
        return weights @ values, weights
    scores = scores / temperature
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = exps / exps.sum(axis=-1, keepdims=True)
    return weights @ values, weights
