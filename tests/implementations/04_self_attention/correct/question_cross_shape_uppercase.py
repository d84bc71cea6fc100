"""Graded question: the right letter in upper case."""
# cell: ch04_question_cross_shape
answer_cross_shape = "A"
