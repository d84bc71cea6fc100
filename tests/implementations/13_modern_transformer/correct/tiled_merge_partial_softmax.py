"""Each block of keys gives its own normalised output and log-sum-exp; partial results are merged with logaddexp
(the form FlashDecoding uses to combine splits). Rows a causal mask hides from a whole block get a zero partial
output and a log-sum-exp of -inf, which the merge ignores.
"""
# cell: ch13_tiled_attention_function
def tiled_attention(q, k, v, block_size, is_causal=False):
    scale = q.shape[-1] ** -0.5
    lse = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype, device=q.device)
    out = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype, device=q.device)
    query_index = torch.arange(q.shape[-2], device=q.device)
    for start in range(0, k.shape[-2], block_size):
        keys, values = k[..., start:start + block_size, :], v[..., start:start + block_size, :]
        s = torch.einsum("...qd,...kd->...qk", q, keys) * scale
        if is_causal:
            key_index = torch.arange(start, start + keys.shape[-2], device=q.device)
            s = s.masked_fill(key_index[None, :] > query_index[:, None], -math.inf)
        block_lse = torch.logsumexp(s, dim=-1)
        block_out = torch.nan_to_num(torch.einsum("...qk,...kd->...qd", torch.exp(s - block_lse[..., None]), values))
        merged = torch.logaddexp(lse, block_lse)
        out = out * torch.exp(lse - merged)[..., None] + block_out * torch.exp(block_lse - merged)[..., None]
        lse = merged
    return out, lse
