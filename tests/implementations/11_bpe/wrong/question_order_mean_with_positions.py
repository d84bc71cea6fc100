"""The mean of token embeddings plus positional encodings: the positions are added, but their mean is the same
for every sequence of a given length.

expect-fail: ch11_question_order_model_check
"""
# cell: ch11_question_order_model
answer_order_model = "b"
