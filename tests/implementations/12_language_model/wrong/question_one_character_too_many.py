"""Graded question: counts 62 characters (one too many, as if the end of the text were a character too):
ln 62 = 4.127, outside the 0.015 the answer is allowed (ln 61 = 4.111; 4.1, rounded to one decimal, is inside).

expect-fail: ch12_question_uniform_loss_check
"""
# cell: ch12_question_uniform_loss
answer_uniform_loss = math.log(62)
