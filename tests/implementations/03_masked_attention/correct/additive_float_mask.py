"""Turns the boolean mask into an additive float mask (0 / -inf) internally, with 0 on fully masked rows,
and zeroes those rows after the softmax; padding mask with expand-free view, causal with ones().tril()."""
# cell: ch03_padding_mask
def padding_mask(lengths, max_len):
    lengths = torch.as_tensor(lengths)   # a list or a tensor
    batch = lengths.shape[0]
    positions = torch.arange(max_len, device=lengths.device).expand(batch, max_len)
    return (positions < lengths.view(batch, 1)).view(batch, 1, 1, max_len)


# cell: ch03_causal_mask
def causal_mask(size):
    return torch.tril(torch.ones(size, size)).bool()


# cell: ch03_scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = attention_scores(q, k)
    if mask is None:
        return torch.softmax(scores, dim=-1) @ v, torch.softmax(scores, dim=-1)
    empty = ~mask.any(dim=-1, keepdim=True)
    bias = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device)
    bias = bias.masked_fill(~mask, float("-inf")).masked_fill(empty, 0.0)
    weights = torch.softmax(scores + bias, dim=-1)
    weights = weights.masked_fill(empty, 0.0)
    return weights @ v, weights
