"""LayerNorm dividing by std + eps, as some tutorials write it: invisible on features of spread 1, wrong
by a factor of 3 on features that differ by about 0.001.

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
        std = x.std(dim=-1, correction=0, keepdim=True)
        return self.weight * (x - mean) / (std + self.eps) + self.bias   # the mistake: eps outside the root
