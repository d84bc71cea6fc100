"""LayerNorm that hands the computation to F.layer_norm: the right numbers, but not the exercise, which
asks for the computation written with tensor operations.

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
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)   # the mistake: torch's own
