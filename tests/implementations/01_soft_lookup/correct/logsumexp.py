"""Log-domain softmax: log w_j = s_j - logsumexp(s), with the logsumexp written out by hand."""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    scores = np.matmul(query, keys.T) / temperature
    top = scores.max(axis=-1, keepdims=True)
    log_norm = top + np.log(np.exp(scores - top).sum(axis=-1, keepdims=True))
    weights = np.exp(scores - log_norm)
    return np.matmul(weights, values), weights
