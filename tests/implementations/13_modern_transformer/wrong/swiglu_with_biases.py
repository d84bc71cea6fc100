"""SwiGLU's three layers left with nn.Linear's default bias=True. The visible check computes the formula with the
module's own layers (biases included) and passes; the hidden tests compare with the bias-free formula.

expect-fail: ch13_swiglu
"""
# cell: ch13_swiglu_class
class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff)
        self.w3 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))
