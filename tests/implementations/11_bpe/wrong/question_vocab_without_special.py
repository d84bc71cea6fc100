"""Bytes plus merges, the special token forgotten: 50,256.

expect-fail: ch11_question_gpt2_vocab_check
"""
# cell: ch11_question_gpt2_vocab
answer_gpt2_vocab = 50256
