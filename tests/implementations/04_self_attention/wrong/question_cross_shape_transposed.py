"""Graded question: the weights with one row per key and one column per query, (2, 9, 5): the transpose.

expect-fail: ch04_question_cross_shape_check
"""
# cell: ch04_question_cross_shape
answer_cross_shape = "b"
