"""Masks by comparing index grids (no tril), attention with torch.where instead of masked_fill."""
# cell: ch03_padding_mask
def padding_mask(lengths, max_len):
    lengths = torch.as_tensor(lengths)   # a list or a tensor
    keep = lengths.unsqueeze(-1) > torch.arange(max_len, device=lengths.device)   # (batch, max_len)
    return keep.unsqueeze(1).unsqueeze(1)


# cell: ch03_causal_mask
def causal_mask(size, device=None):
    i = torch.arange(size, device=device)
    return i[:, None] >= i[None, :]


# cell: ch03_scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = attention_scores(q, k)
    if mask is not None:
        has_key = mask.any(dim=-1, keepdim=True)
        neg_inf = torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device)
        zero = torch.zeros((), dtype=scores.dtype, device=scores.device)
        scores = torch.where(mask, scores, neg_inf)
        scores = torch.where(has_key, scores, zero)
        weights = torch.where(has_key, torch.softmax(scores, dim=-1), zero)
    else:
        weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights
