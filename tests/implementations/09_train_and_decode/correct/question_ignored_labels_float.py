"""Graded question: the right count as a float."""
# cell: ch09_question_ignored_labels
answer_ignored_labels = 2.0
