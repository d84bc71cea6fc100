"""Always works on a 2-D batch (np.atleast_2d) and returns row 0 for a single query (the correct
version of squeezing)."""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    queries = np.atleast_2d(query)                                  # (m, d)
    scores = queries @ keys.T / temperature                         # (m, n)
    exps = np.exp(scores - scores.max(axis=1)[:, None])
    weights = exps / exps.sum(axis=1)[:, None]                      # (m, n)
    output = weights @ values                                       # (m, d_v)
    if np.ndim(query) == 1:
        return output[0], weights[0]
    return output, weights
