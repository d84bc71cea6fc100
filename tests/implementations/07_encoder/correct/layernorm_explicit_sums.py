"""LayerNorm written with explicit sums divided by the width, x.shape[-1], in a helper function; the mean is
subtracted once and reused."""
# cell: ch07_layernorm_module
def centre_and_scale(x, eps):
    """(x - mean) / sqrt(biased variance + eps), over the last axis."""
    width = x.shape[-1]
    centred = x - x.sum(dim=-1, keepdim=True) / width
    variance = (centred * centred).sum(dim=-1, keepdim=True) / width
    return centred / torch.sqrt(variance + eps)


class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.d_model, self.eps = d_model, eps
        self.weight = nn.Parameter(torch.full((d_model,), 1.0))
        self.bias = nn.Parameter(torch.full((d_model,), 0.0))

    def forward(self, x):
        return centre_and_scale(x, self.eps) * self.weight + self.bias
