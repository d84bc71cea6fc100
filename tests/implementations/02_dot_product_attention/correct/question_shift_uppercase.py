"""Graded question: the right letter, written in upper case with spaces around it."""
# cell: ch02_question_shift
answer_shift = " A "
