"""GELU instead of ReLU (BERT's and GPT's choice, not the paper's nor torch's default).

expect-fail: ch07_feed_forward, ch07_post_ln, ch07_pre_ln, ch07_padding_mask, ch07_dropout, ch07_encoder, ch07_gradients
"""
# cell: ch07_feed_forward_module
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.activation = nn.GELU()                            # the mistake
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.linear2(self.dropout(self.activation(self.linear1(x))))
