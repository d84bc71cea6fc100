"""RMSNorm that subtracts the mean first, as LayerNorm does: the root mean square of x - mean(x), the standard
deviation.

expect-fail: ch13_rmsnorm
"""
# cell: ch13_rmsnorm_class
class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        centred = x - x.mean(dim=-1, keepdim=True)
        return centred / torch.sqrt(centred.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight
