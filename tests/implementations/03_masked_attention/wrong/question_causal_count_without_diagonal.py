"""Graded question: counts the pairs strictly below the diagonal, 15, forgetting that a query may attend to
itself.

expect-fail: ch03_question_causal_count_check
"""
# cell: ch03_question_causal_count
answer_causal_count = 15
