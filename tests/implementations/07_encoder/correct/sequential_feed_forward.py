"""The feed-forward network as an nn.Sequential, with linear1 and linear2 as aliases of its two
linear layers (the parameters are registered once each)."""
# cell: ch07_feed_forward_module
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))
        self.linear1 = self.net[0]
        self.linear2 = self.net[3]

    def forward(self, x):
        return self.net(x)
