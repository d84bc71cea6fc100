"""Graded question: gives the work WITH the cache, 5 + 1 + 1 + 1 = 8, for the call without it.

expect-fail: ch10_question_uncached_work_check
"""
# cell: ch10_question_uncached_work
answer_uncached_work = 8
