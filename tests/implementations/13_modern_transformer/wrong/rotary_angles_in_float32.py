"""The angles computed in float32 whatever the dtype of x (torch.arange(...).float()): a float64 x gets angles off by about 1e-7 per radian.

expect-fail: ch13_rotary_example
"""
# cell: ch13_apply_rotary_function
def apply_rotary(x, offset=0, base=10000.0):
    length, d_head = x.shape[-2], x.shape[-1]
    omega = base ** (-torch.arange(0, d_head, 2).float() / d_head)
    theta = torch.arange(offset, offset + length).float()[:, None] * omega[None, :]
    cos, sin = theta.cos().to(x.device), theta.sin().to(x.device)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out
