"""bits_per_character multiplies by chars_per_token instead of dividing: a token's bits are shared by its
characters, so a subword model's loss per character is smaller than per token, not larger.

expect-fail: ch12_bits_per_character
"""
# cell: ch12_bits_per_character_function
def bits_per_character(loss_nats, chars_per_token=1.0):
    return loss_nats / math.log(2) * chars_per_token
