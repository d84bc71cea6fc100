"""Graded question: gives the uniform model's loss in bits, log2 61 = 5.93, where nats were asked.

expect-fail: ch12_question_uniform_loss_check
"""
# cell: ch12_question_uniform_loss
answer_uniform_loss = 5.93
