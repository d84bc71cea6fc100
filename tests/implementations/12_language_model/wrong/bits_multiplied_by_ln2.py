"""bits_per_character multiplies by ln 2 instead of dividing: bits and nats the wrong way round (0.69 times the
nats instead of 1.44 times).

expect-fail: ch12_bits_per_character
"""
# cell: ch12_bits_per_character_function
def bits_per_character(loss_nats, chars_per_token=1.0):
    return loss_nats * math.log(2) / chars_per_token
