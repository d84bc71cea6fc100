"""RMSNorm that keeps LayerNorm's bias (a second parameter, zeros): RMSNorm drops it.

expect-fail: ch13_rmsnorm
"""
# cell: ch13_rmsnorm_class
class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight + self.bias
