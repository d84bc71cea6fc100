"""Graded question: the right value written as the computation it comes from."""
# cell: ch12_question_uniform_loss
answer_uniform_loss = -math.log(1 / 61)
