"""LayerNorm that detaches its mean and variance ("they are statistics, not weights"): the same forward pass,
but the gradient with respect to x leaves out how the mean and the variance depend on x.

expect-fail: ch07_layernorm_gradients
"""
# cell: ch07_layernorm_module
class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True).detach()                # the mistake: no gradient through the mean
        var = x.var(dim=-1, correction=0, keepdim=True).detach()    # ... nor through the variance
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias
