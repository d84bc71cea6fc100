"""FlashAttention-2's loop: the queries in blocks too (outer loop), the keys in blocks (inner loop, skipping the
blocks a causal mask hides entirely), the output and lse written into preallocated tensors block by block, the
scale applied to the queries first.
"""
# cell: ch13_tiled_attention_function
def tiled_attention(q, k, v, block_size, is_causal=False):
    l_q, l_k, d = q.shape[-2], k.shape[-2], q.shape[-1]
    out = q.new_empty(q.shape[:-1] + (v.shape[-1],))
    lse = q.new_empty(q.shape[:-1])
    for qs in range(0, l_q, block_size):
        qe = min(qs + block_size, l_q)
        q_blk = q[..., qs:qe, :] / math.sqrt(d)
        m = q_blk.new_full(q_blk.shape[:-1], -math.inf)
        l = q_blk.new_zeros(q_blk.shape[:-1])
        acc = q_blk.new_zeros(q_blk.shape[:-1] + (v.shape[-1],))
        last = min(l_k, qe) if is_causal else l_k
        for ks in range(0, last, block_size):
            ke = min(ks + block_size, l_k)
            s = q_blk @ k[..., ks:ke, :].transpose(-1, -2)
            if is_causal:
                qi = torch.arange(qs, qe, device=q.device)[:, None]
                kj = torch.arange(ks, ke, device=q.device)[None, :]
                s = torch.where(kj <= qi, s, torch.full_like(s, -math.inf))
            m_new = torch.maximum(m, s.max(dim=-1).values)
            alpha = torch.exp(m - m_new)
            p = torch.exp(s - m_new[..., None])
            l = alpha * l + p.sum(-1)
            acc = alpha[..., None] * acc + p @ v[..., ks:ke, :]
            m = m_new
        out[..., qs:qe, :] = acc / l[..., None]
        lse[..., qs:qe] = m + torch.log(l)
    return out, lse
