"""Graded question: answers that the row [101, 102, 103] overflows to nan in float32, which is what the naive
softmax does; the stable softmax of the exercise subtracts the row's maximum first.

expect-fail: ch02_question_shift_check
"""
# cell: ch02_question_shift
answer_shift = "c"
