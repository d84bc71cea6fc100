"""Graded question: counts the padding of tgt_in as well as of tgt_out, 4: tgt_in holds the decoder's inputs, and
the loss sees only the labels.

expect-fail: ch09_question_ignored_labels_check
"""
# cell: ch09_question_ignored_labels
answer_ignored_labels = 4
