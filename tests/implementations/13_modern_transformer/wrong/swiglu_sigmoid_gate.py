"""The original GLU's gate, sigmoid(w1 x), instead of SiLU(w1 x) = w1 x * sigmoid(w1 x).

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
        return self.w2(torch.sigmoid(self.w1(x)) * self.w3(x))
