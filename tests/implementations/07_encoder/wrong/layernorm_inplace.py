"""LayerNorm that centres its input in place (x -= mean): the caller's tensor changes, and autograd
refuses the in-place change of a leaf that requires a gradient.

expect-fail: ch07_layernorm_forward, ch07_layernorm_gradients
"""
# cell: ch07_layernorm_module
class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        x -= x.mean(dim=-1, keepdim=True)                           # the mistake: writes into the caller's x
        var = x.pow(2).mean(dim=-1, keepdim=True)
        return self.weight * x / torch.sqrt(var + self.eps) + self.bias
