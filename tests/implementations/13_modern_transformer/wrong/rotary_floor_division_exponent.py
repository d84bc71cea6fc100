"""Chapter 06's common mistake in the frequencies: the exponent written with floor division, (2i) // d_head, which is 0 for every pair, so every pair turns at 1 radian per position.

expect-fail: ch13_rotary_example
"""
# cell: ch13_apply_rotary_function
def apply_rotary(x, offset=0, base=10000.0):
    length, d_head = x.shape[-2], x.shape[-1]
    exponents = torch.arange(0, d_head, 2, dtype=x.dtype, device=x.device) // d_head
    omega = base ** (-exponents)
    positions = torch.arange(offset, offset + length, dtype=x.dtype, device=x.device)
    theta = positions[:, None] * omega[None, :]
    cos, sin = theta.cos(), theta.sin()
    even, odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out
