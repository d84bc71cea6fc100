"""LayerNorm with the variance as mean(x^2) - mean^2: the same number in exact arithmetic, but two large
numbers subtracted when the features sit far from 0 (catastrophic cancellation): wrong in float64 at 10,000.

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
        var = (x * x).mean(dim=-1, keepdim=True) - mean * mean     # the mistake: cancels at large offsets
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias
