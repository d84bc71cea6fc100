"""einsum with named axes; the leading '...' covers one query and a batch alike."""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    scores = np.einsum("...d,nd->...n", query, keys) / temperature
    exps = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = exps / np.sum(exps, axis=-1, keepdims=True)
    output = np.einsum("...n,nv->...v", weights, values)
    return output, weights
