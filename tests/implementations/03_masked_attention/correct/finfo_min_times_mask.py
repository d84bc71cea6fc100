"""Fills masked scores with the dtype's most negative finite number (a fully masked row becomes uniform,
never NaN) and multiplies the weights by the mask, which zeroes such rows; padding mask built in a loop."""
# cell: ch03_padding_mask
def padding_mask(lengths, max_len):
    lengths = torch.as_tensor(lengths)   # a list or a tensor
    mask = torch.zeros(len(lengths), max_len, dtype=torch.bool, device=lengths.device)
    for row, n in enumerate(lengths.tolist()):
        mask[row, :n] = True
    return mask.reshape(len(lengths), 1, 1, max_len)


# cell: ch03_scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = attention_scores(q, k)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights * mask
    return weights @ v, weights
