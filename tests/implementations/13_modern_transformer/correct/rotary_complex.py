"""Rotary embeddings with complex numbers, as Meta's Llama code writes them: each adjacent pair (2i, 2i+1) is the
complex number x_2i + i x_2i+1, multiplied by e^(i theta).
"""
# cell: ch13_apply_rotary_function
def apply_rotary(x, offset=0, base=10000.0):
    length, d_head = x.shape[-2], x.shape[-1]
    freqs = 1.0 / base ** (torch.arange(0, d_head, 2, dtype=x.dtype, device=x.device) / d_head)
    angles = torch.outer(torch.arange(offset, offset + length, dtype=x.dtype, device=x.device), freqs)
    turn = torch.polar(torch.ones_like(angles), angles)                       # (L, d_head/2), complex
    pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], d_head // 2, 2).contiguous())
    return torch.view_as_real(pairs * turn).reshape(x.shape)
