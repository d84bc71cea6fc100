"""Rotary embeddings in the halves layout of GPT-NeoX and Hugging Face's Llama: feature i is paired with feature i + d_head/2, not with its neighbour (the spec asks for adjacent pairs (2i, 2i+1)). The lengths of adjacent pairs are then not kept either.

expect-fail: ch13_rotary_example, ch13_rotary_positions
"""
# cell: ch13_apply_rotary_function
def apply_rotary(x, offset=0, base=10000.0):
    length, d_head = x.shape[-2], x.shape[-1]
    exponents = torch.arange(0, d_head, 2, dtype=x.dtype, device=x.device) / d_head
    omega = base ** (-exponents)
    positions = torch.arange(offset, offset + length, dtype=x.dtype, device=x.device)
    theta = positions[:, None] * omega[None, :]
    cos, sin = theta.cos(), theta.sin()
    first, second = x[..., : d_head // 2], x[..., d_head // 2 :]
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)
