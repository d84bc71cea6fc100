"""The feed-forward network has no activation: linear2(linear1(x)) is one linear map.

expect-fail: ch07_feed_forward, ch07_post_ln, ch07_pre_ln, ch07_padding_mask, ch07_dropout, ch07_encoder, ch07_gradients
"""
# cell: ch07_feed_forward_module
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.linear2(self.dropout(self.linear1(x)))    # the mistake: no ReLU
