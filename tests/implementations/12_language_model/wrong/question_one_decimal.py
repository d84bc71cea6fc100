"""Graded question: the right value to one decimal, 4.1, where two decimals were asked (ln 61 = 4.111 is 4.11);
it scored full marks while the tolerance was 0.015 (issue 40).

expect-fail: ch12_question_uniform_loss_check
"""
# cell: ch12_question_uniform_loss
answer_uniform_loss = 4.1
