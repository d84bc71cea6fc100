"""RMSNorm through torch.linalg.vector_norm (the mean square is the squared norm over d); SwiGLU with SiLU written
out as z * sigmoid(z), its layers registered in another order.
"""
# cell: ch13_rmsnorm_class
class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.d_model = d_model
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
        rms = torch.sqrt(norm ** 2 / x.shape[-1] + self.eps)
        return self.weight * (x / rms)

# cell: ch13_swiglu_class
class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        a = self.w1(x)
        return self.w2(a * torch.sigmoid(a) * self.w3(x))
