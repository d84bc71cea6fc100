"""The loop over key blocks runs to the number of queries, L_q, not of keys, L_k: right whenever L_q == L_k (every visible check), wrong for cross-attention.

expect-fail: ch13_tiled_values, ch13_tiled_memory
"""
# cell: ch13_tiled_attention_function
def tiled_attention(q, k, v, block_size, is_causal=False):
    l_q, l_k = q.shape[-2], k.shape[-2]
    scale = 1.0 / math.sqrt(q.shape[-1])
    m = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=q.dtype, device=q.device)
    l = torch.zeros_like(m)
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype, device=q.device)
    rows = torch.arange(l_q, device=q.device)[:, None]
    for start in range(0, l_q, block_size):
        stop = min(start + block_size, l_q)
        s = torch.matmul(q, k[..., start:stop, :].transpose(-2, -1)) * scale
        if is_causal:
            s = s.masked_fill(torch.arange(start, stop, device=q.device)[None, :] > rows, -math.inf)
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        p = torch.exp(s - m_new)
        correction = torch.exp(m - m_new)
        l = l * correction + p.sum(dim=-1, keepdim=True)
        acc = acc * correction + torch.matmul(p, v[..., start:stop, :])
        m = m_new
    return acc / l, (m + torch.log(l)).squeeze(-1)
