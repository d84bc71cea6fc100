"""Graded question: the right count written as a float and as the sum it comes from."""
# cell: ch03_question_causal_count
answer_causal_count = float(sum(range(1, 7)))
