"""RMSNorm whose eps defaults to 1e-5, LayerNorm's default, instead of 1e-6.

expect-fail: ch13_rmsnorm
"""
# cell: ch13_rmsnorm_class
class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight
