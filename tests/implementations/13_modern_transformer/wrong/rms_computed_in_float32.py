"""RMSNorm computed in float32 whatever the input, as Meta's Llama code does (`self._norm(x.float()).type_as(x)`):
a float64 input loses its precision.

expect-fail: ch13_rmsnorm
"""
# cell: ch13_rmsnorm_class
class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight
