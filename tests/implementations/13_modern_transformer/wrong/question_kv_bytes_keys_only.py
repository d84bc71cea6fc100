"""Only the keys counted, not the values: 12,288 bytes.

expect-fail: ch13_question_kv_bytes_check
"""
# cell: ch13_question_kv_bytes
answer_kv_bytes = 24 * 4 * 64 * 2
