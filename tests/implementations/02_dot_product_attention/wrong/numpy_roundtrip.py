"""Computes attention in numpy and converts back: right numbers, but no gradient reaches q, k, v.

expect-fail: sdpa_gradients_and_stability
"""
# cell: scaled_dot_product_attention
import numpy as np


def scaled_dot_product_attention(q, k, v, mask=None):
    qn, kn, vn = (t.detach().cpu().numpy() for t in (q, k, v))
    scores = qn @ np.swapaxes(kn, -2, -1) / math.sqrt(qn.shape[-1])
    if mask is not None:
        scores = np.where(mask.cpu().numpy(), scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
    output = weights @ vn
    return torch.from_numpy(output).to(q.device), torch.from_numpy(weights).to(q.device)
