"""The cache counted for all 16 query heads, as if every head had its own keys and values: 98,304 bytes.

expect-fail: ch13_question_kv_bytes_check
"""
# cell: ch13_question_kv_bytes
answer_kv_bytes = 2 * 24 * 16 * 64 * 2
