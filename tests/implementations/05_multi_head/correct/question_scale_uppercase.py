"""Graded question: the right letter in upper case, with a trailing newline."""
# cell: ch05_question_scale
answer_scale = "B\n"
