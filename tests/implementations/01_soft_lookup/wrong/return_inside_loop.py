"""Loops over the queries of a batch with the return statement indented into the loop: only the
first query is looked up, the other rows stay zero.

expect-fail: ch01_batch, ch01_stability
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    if query.ndim == 1:
        scores = keys @ query / temperature
        exps = np.exp(scores - scores.max())
        weights = exps / exps.sum()
        return weights @ values, weights
    outputs = np.zeros((query.shape[0], values.shape[1]))
    weights = np.zeros((query.shape[0], keys.shape[0]))
    for i in range(query.shape[0]):
        scores = keys @ query[i] / temperature
        exps = np.exp(scores - scores.max())
        weights[i] = exps / exps.sum()
        outputs[i] = weights[i] @ values
        return outputs, weights
