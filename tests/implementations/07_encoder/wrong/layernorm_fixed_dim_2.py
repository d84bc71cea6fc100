"""LayerNorm over dim=2, the feature axis of a (batch, L, d_model) input only: right for three axes, an
error or the wrong axis for any other number (the self-check's (3, d_model) input, the hidden tests' others).

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
        mean = x.mean(dim=2, keepdim=True)                          # the mistake: dim=2, not dim=-1
        var = x.var(dim=2, correction=0, keepdim=True)
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias
