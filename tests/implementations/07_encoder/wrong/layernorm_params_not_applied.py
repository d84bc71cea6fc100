"""LayerNorm that registers weight and bias but never uses them: exact while they are ones and zeros.

expect-fail: ch07_layernorm_parameters, ch07_layernorm_forward, ch07_layernorm_gradients
"""
# cell: ch07_layernorm_module
class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, correction=0, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps)              # the mistake: no scale, no shift
