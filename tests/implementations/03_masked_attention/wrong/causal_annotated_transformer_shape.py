"""Causal mask of shape (1, size, size), as the Annotated Transformer's `subsequent_mask` returns it:
right values, wrong shape for the contract (it still combines with a padding mask by broadcasting).

expect-fail: ch03_causal_lower_triangle
"""
# cell: ch03_causal_mask
def causal_mask(size):
    attn_shape = (1, size, size)
    future = torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8)
    return future == 0
