"""Graded question: the right letter in upper case."""
# cell: ch08_question_logits_shape
answer_logits_shape = "A"
