"""Answers (a): takes a LayerNorm with weight 1 and bias 0 for the identity.

expect-fail: ch07_question_final_norm_check
"""
# cell: ch07_question_final_norm
answer_final_norm = "a"
