"""LayerNorm with x.var(unbiased=False) and the standard deviation computed once per position, like the
classic from-scratch listings, but with eps inside the square root."""
# cell: ch07_layernorm_module
class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = (x.var(-1, unbiased=False, keepdim=True) + self.eps).sqrt()
        normalised = (x - mean) / std
        return normalised * self.weight + self.bias
