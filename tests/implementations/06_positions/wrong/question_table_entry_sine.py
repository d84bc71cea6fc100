"""Graded question: takes column 1 for a sine, sin(3) = 0.141 (the sines are in the even columns).

expect-fail: ch06_question_table_entry_check
"""
# cell: ch06_question_table_entry
answer_table_entry = 0.141
