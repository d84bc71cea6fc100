"""RMSNorm with eps added after the square root, x / (sqrt(mean(x^2)) + eps).

expect-fail: ch13_rmsnorm
"""
# cell: ch13_rmsnorm_class
class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True))
        return x / (rms + self.eps) * self.weight
