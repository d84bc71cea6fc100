"""The right number of bytes written as a float.
"""
# cell: ch13_question_kv_bytes
answer_kv_bytes = 24576.0
