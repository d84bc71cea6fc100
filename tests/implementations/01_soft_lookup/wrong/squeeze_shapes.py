"""Makes everything 2-D with np.atleast_2d and goes back with .squeeze(): a batch of one query
loses its batch axis, and values of width 1 lose their last axis.

expect-fail: ch01_weights_one_query, ch01_output_one_query, ch01_batch
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    queries = np.atleast_2d(query)                      # (m, d)
    scores = queries @ keys.T / temperature             # (m, n)
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = exps / exps.sum(axis=-1, keepdims=True)
    return (weights @ values).squeeze(), weights.squeeze()
