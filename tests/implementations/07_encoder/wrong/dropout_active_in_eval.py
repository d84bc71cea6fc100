"""F.dropout(x, p) without training=self.training: F.dropout's own default is training=True, so the
feed-forward network drops units in eval() mode too.

expect-fail: ch07_feed_forward, ch07_dropout, ch07_encoder
"""
# cell: ch07_feed_forward_module
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.p = dropout

    def forward(self, x):
        hidden = F.relu(self.linear1(x))
        return self.linear2(F.dropout(hidden, self.p))        # the mistake: training defaults to True
