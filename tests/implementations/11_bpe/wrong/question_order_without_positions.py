"""The encoder without positional encoding: self-attention alone is permutation equivariant.

expect-fail: ch11_question_order_model_check
"""
# cell: ch11_question_order_model
answer_order_model = "c"
