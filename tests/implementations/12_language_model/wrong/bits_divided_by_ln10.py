"""bits_per_character divides by ln 10 (math.log(10), thinking of "log base 10"): the loss in hartleys, not bits.

expect-fail: ch12_bits_per_character
"""
# cell: ch12_bits_per_character_function
def bits_per_character(loss_nats, chars_per_token=1.0):
    return loss_nats / math.log(10) / chars_per_token
