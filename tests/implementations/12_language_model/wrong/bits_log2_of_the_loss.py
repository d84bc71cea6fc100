"""bits_per_character takes log2 of the loss itself ("bits means log2"): the loss is already a logarithm, and
converting it from ln to log2 is a division by ln 2.

expect-fail: ch12_bits_per_character
"""
# cell: ch12_bits_per_character_function
def bits_per_character(loss_nats, chars_per_token=1.0):
    return math.log2(loss_nats) / chars_per_token
