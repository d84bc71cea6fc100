"""Graded question: a generator that projects to d_model, (4, 6, 32): the mistake the lesson warns about.

expect-fail: ch08_question_logits_shape_check
"""
# cell: ch08_question_logits_shape
answer_logits_shape = "c"
