"""Graded question: gives the logits the source's length, (4, 9, 120), as if there were one prediction per
source token.

expect-fail: ch08_question_logits_shape_check
"""
# cell: ch08_question_logits_shape
answer_logits_shape = "b"
