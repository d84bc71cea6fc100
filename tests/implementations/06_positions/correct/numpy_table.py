"""The table built with numpy in float64 and converted with .float(); dropout with F.dropout and
training=self.training."""
# cell: ch06_sinusoidal_table
def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2 == 1:
        raise ValueError(f"sinusoidal positional encoding needs an even d_model, got {d_model}")
    pos = np.arange(max_len, dtype=np.float64)[:, None]              # (max_len, 1)
    inv_freq = 1.0 / np.power(10000.0, np.arange(0, d_model, 2) / d_model)
    table = np.empty((max_len, d_model))
    table[:, ::2] = np.sin(pos * inv_freq)
    table[:, 1::2] = np.cos(pos * inv_freq)
    return torch.from_numpy(table).float()

# cell: ch06_positional_encoding_module
import torch.nn.functional as F


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.p = dropout
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))

    def forward(self, x):
        return F.dropout(x + self.pe[: x.shape[1]], p=self.p, training=self.training)
