"""LayerNorm whose weight and bias are buffers: saved in state_dict and moved by .to(), so nn.LayerNorm's
weights load into it, but they are not parameters, and no optimiser would ever train them.

expect-fail: ch07_layernorm_parameters, ch07_layernorm_gradients
"""
# cell: ch07_layernorm_module
class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(d_model))        # the mistake: buffers, not parameters
        self.register_buffer("bias", torch.zeros(d_model))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, correction=0, keepdim=True)
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias
