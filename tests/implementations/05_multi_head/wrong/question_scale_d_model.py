"""Graded question: sqrt(d_model) = 16, the scale of one full-width head, not of a head of width 64.

expect-fail: ch05_question_scale_check
"""
# cell: ch05_question_scale
answer_scale = "a"
