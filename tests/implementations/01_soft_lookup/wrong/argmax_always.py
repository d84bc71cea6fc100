"""Returns the hard lookup at every temperature: one-hot weights on the best key (np.argmax),
i.e. the Python dictionary with a nearest-key match instead of attention.

expect-fail: ch01_weights_one_query, ch01_output_one_query, ch01_temperature, ch01_batch, ch01_stability
"""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    scores = query @ keys.T / temperature
    weights = np.eye(keys.shape[0])[np.argmax(scores, axis=-1)]
    return weights @ values, weights
