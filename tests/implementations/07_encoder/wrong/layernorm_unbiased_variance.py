"""LayerNorm with torch.var's default, the unbiased variance divided by d_model - 1: every output is
sqrt((d-1)/d) times too small.

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
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True)                           # the mistake: divided by d_model - 1
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias
