"""LayerNorm whose mean and variance run over the positions of each sequence (dim=1) instead of each
position's features: the wrong axis, which keeps the shape.

expect-fail: ch07_layernorm_forward
"""
# cell: ch07_layernorm_module
class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        mean = x.mean(dim=1, keepdim=True)                          # the mistake: over the positions
        var = x.var(dim=1, correction=0, keepdim=True)
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias
