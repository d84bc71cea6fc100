"""Graded question: gives the probability of each character, 1/61, instead of the loss -ln(1/61).

expect-fail: ch12_question_uniform_loss_check
"""
# cell: ch12_question_uniform_loss
answer_uniform_loss = 1 / 61
