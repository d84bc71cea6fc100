"""Forgets the transpose: query @ keys. With the square, symmetric keys of the lesson's example
(the identity) it gives the right numbers; with n != d it raises, and with other square keys it
compares the query with the keys' columns.

expect-fail: ch01_weights_one_query, ch01_output_one_query, ch01_temperature, ch01_batch, ch01_stability
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    scores = query @ keys / temperature
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = exps / exps.sum(axis=-1, keepdims=True)
    return weights @ values, weights
