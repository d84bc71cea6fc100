"""Answers (c): post-LN would lose the most, overlooking that each post-LN layer already ends with norm2.

expect-fail: ch07_question_final_norm_check
"""
# cell: ch07_question_final_norm
answer_final_norm = "c"
