"""LayerNorm that accepts eps but uses the constant 1e-5: right for the default, wrong for LayerNorm(d, eps=0.1).

expect-fail: ch07_layernorm_forward
"""
# cell: ch07_layernorm_module
class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, correction=0, keepdim=True)
        return self.weight * (x - mean) / torch.sqrt(var + 1e-5) + self.bias   # the mistake: eps not used
