"""The merges alone, as if the 256 bytes and the special token were not entries of the vocabulary: 50,000.

expect-fail: ch11_question_gpt2_vocab_check
"""
# cell: ch11_question_gpt2_vocab
answer_gpt2_vocab = 50000
