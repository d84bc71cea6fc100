"""Zeroes the fully masked rows with `torch.where(..., torch.zeros(weights.shape))`, a tensor created on the CPU:
right on a CPU, an error as soon as the inputs live on a GPU. The hidden tests show it on any machine with inputs
on PyTorch's `meta` device.

expect-fail: ch03_masked_keys_get_zero_weight, ch03_fully_masked_rows_are_zero
"""
# cell: ch03_scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = attention_scores(q, k)
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
    else:
        has_key = mask.any(dim=-1, keepdim=True)
        scores = scores.masked_fill(~mask, float("-inf")).masked_fill(~has_key, 0.0)
        weights = torch.softmax(scores, dim=-1)
        weights = torch.where(has_key, weights, torch.zeros(weights.shape, dtype=weights.dtype))   # the mistake
    return weights @ v, weights
