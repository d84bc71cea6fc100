"""Graded question: the right count written as the sum it comes from."""
# cell: ch10_question_uncached_work
answer_uncached_work = sum(range(5, 9))
