"""SwiGLU with SiLU on w3's branch instead of w1's: w2(w1(x) * SiLU(w3(x))).

expect-fail: ch13_swiglu
"""
# cell: ch13_swiglu_class
class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.w2(self.w1(x) * F.silu(self.w3(x)))
