"""Graded question: the entry written as the expression it is, cos(3 / 10000 ** (0 / 8))."""
# cell: ch06_question_table_entry
answer_table_entry = math.cos(3 / 10000 ** (0 / 8))
