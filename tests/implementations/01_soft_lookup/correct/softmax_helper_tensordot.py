"""A separate softmax helper, np.tensordot for the similarities and a broadcast sum for the
weighted average."""
# cell: ch01_soft_lookup
def _softmax(x, axis=-1):
    z = x - np.amax(x, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def soft_lookup(query, keys, values, temperature=1.0):
    scores = np.tensordot(query, keys, axes=([-1], [-1])) / temperature   # (..., n)
    weights = _softmax(scores)
    output = (weights[..., :, None] * values).sum(axis=-2)              # (..., n, d_v) -> (..., d_v)
    return output, weights
