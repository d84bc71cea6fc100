"""Graded question: feeds the last new token back once more, 5 + 6 + 7 + 8 + 9 = 35 (the fourth new token is
appended, never fed).

expect-fail: ch10_question_uncached_work_check
"""
# cell: ch10_question_uncached_work
answer_uncached_work = 35
