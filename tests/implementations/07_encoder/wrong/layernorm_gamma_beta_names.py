"""LayerNorm with its parameters named after the paper's symbols, gamma and beta: correct arithmetic, but
nn.LayerNorm's state_dict (weight, bias) cannot be loaded into it, nor its into nn.LayerNorm.

expect-fail: ch07_layernorm_parameters, ch07_layernorm_forward
"""
# cell: ch07_layernorm_module
class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(d_model))             # the mistake: torch's names are weight, bias
        self.beta = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, correction=0, keepdim=True)
        return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta
