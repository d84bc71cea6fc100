"""Graded question: believes that larger logits make the softmax sharper (true of a factor, not of an added
constant).

expect-fail: ch02_question_shift_check
"""
# cell: ch02_question_shift
answer_shift = "b"
