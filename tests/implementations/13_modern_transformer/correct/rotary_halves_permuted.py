"""Rotary embeddings computed in the halves layout (rotate_half, as Hugging Face writes it) on features permuted
so that the halves hold the adjacent pairs, then permuted back: the same function as adjacent pairs.
"""
# cell: ch13_apply_rotary_function
def rotate_half(t):
    first, second = t.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


def apply_rotary(x, offset=0, base=10000.0):
    length, d_head = x.shape[-2], x.shape[-1]
    to_halves = torch.cat([torch.arange(0, d_head, 2), torch.arange(1, d_head, 2)]).to(x.device)
    back = torch.argsort(to_halves)
    inv_freq = base ** (-torch.arange(0, d_head, 2, dtype=x.dtype, device=x.device) / d_head)
    angles = torch.arange(offset, offset + length, dtype=x.dtype, device=x.device)[:, None] * inv_freq
    emb = torch.cat((angles, angles), dim=-1)                                  # (L, d_head)
    h = x[..., to_halves]
    rotated = h * emb.cos() + rotate_half(h) * emb.sin()
    return rotated[..., back]
