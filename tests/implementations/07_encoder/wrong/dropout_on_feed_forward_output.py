"""The feed-forward network's dropout acts on its output, after linear2, instead of on the d_ff hidden
units between ReLU and linear2 (where the paper and torch put it).

expect-fail: ch07_feed_forward
"""
# cell: ch07_feed_forward_module
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.linear2(torch.relu(self.linear1(x))))   # the mistake: dropout after linear2
