"""Exact, and not tiled: all the scores (L_q, L_k) at once, softmax, and torch.logsumexp.

expect-fail: ch13_tiled_memory
"""
# cell: ch13_tiled_attention_function
def tiled_attention(q, k, v, block_size, is_causal=False):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if is_causal:
        allowed = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~allowed, -math.inf)
    return torch.matmul(torch.softmax(scores, dim=-1), v), torch.logsumexp(scores, dim=-1)
