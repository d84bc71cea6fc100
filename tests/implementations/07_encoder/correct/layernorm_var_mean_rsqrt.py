"""LayerNorm with torch.var_mean(correction=0) and rsqrt, the parameters set with register_parameter; the
questions answered with capitals and spaces."""
# cell: ch07_layernorm_module
class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = float(eps)
        self.register_parameter("weight", nn.Parameter(torch.ones(d_model)))
        self.register_parameter("bias", nn.Parameter(torch.zeros(d_model)))

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, correction=0, keepdim=True)
        return torch.addcmul(self.bias, (x - mean) * torch.rsqrt(var + self.eps), self.weight)

# cell: ch07_question_invariance
answer_invariance = " C"

# cell: ch07_question_final_norm
answer_final_norm = "B "
